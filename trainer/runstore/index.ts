export { RunStoreWriter } from './writer';
export { RunStoreReader, listRuns } from './reader';
export { readJsonl, appendJsonl, writeFileAtomic } from './jsonl';
