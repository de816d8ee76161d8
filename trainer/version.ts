import packageJson from '../package.json';

/** This release of Rollout Studio (the trainer and the extension share it). */
export const ROLLOUT_STUDIO_VERSION: string = packageJson.version;
