/**
 * Models from the Hugging Face Hub: pulled into the Hugging Face cache (shared with Python's
 * huggingface_hub), and resolved from what a user wrote — a folder, a built-in name or a repo id.
 */
export { HubError } from './hubErrors';
export { hubSettings, type HubSettings } from './hubSettings';
export { pullModel, type PullOptions, type PullProgress, type PullResult } from './pull';
export { BUILT_IN_PREFIX } from '../builtinModels';
export {
  classifyModelPath,
  isRepoId,
  resolveModelPath,
  type ModelSource,
  type ResolveModelOptions,
} from './resolveModelPath';
export type { ModelFileSet } from './modelFiles';
