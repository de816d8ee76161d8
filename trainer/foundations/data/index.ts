/** Datasets: JSONL rows validated with zod, with errors naming file, line and field. */
export {
  DatasetError,
  datasetFromRows,
  loadJsonlDataset,
  writeJsonl,
  type Dataset,
  type DatasetOptions,
  type FieldsSchema,
} from './dataset';
export { describeRow, type DatasetRow, type RowSource } from './row';
export { loadDemonstrations, type DemonstrationTools, type LoadedDemonstration } from './demonstrations';
