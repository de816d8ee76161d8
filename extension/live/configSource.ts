/**
 * Is this TypeScript source a Rollout Studio training config? It imports from 'rollout-studio'
 * and is named `*.config.ts` or does `export default defineConfig(`. (Other tools'
 * `vite.config.ts` and friends also `export default defineConfig(`: the import tells ours apart.)
 */
export function isTrainingConfigSource(fileName: string, text: string): boolean {
  if (!/\.(m|c)?ts$/.test(fileName)) return false;
  if (!/\bfrom\s+['"]rollout-studio['"]/.test(text)) return false;
  return /\.config\.(m|c)?ts$/.test(fileName) || /export\s+default\s+defineConfig\s*\(/.test(text);
}
