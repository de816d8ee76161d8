/**
 * The trainer as a library: `import { … } from 'rollout-studio'`.
 */
export * from './protocol';
export { collectEnvironmentReport, formatEnvironmentReport } from './environment/report';
