export { RunStoreWriter } from './writer';
export { RunStoreReader, listRuns } from './reader';
export { readJsonl, appendJsonl, writeFileAtomic } from './jsonl';
export { JsonlTail, type LineLocation, type TailRead } from './tail';
export { RunDirectoryLock, RunLockedError, liveRunLock, readRunLock, lockHolderAlive } from './runLock';
export { StorageError } from './storageError';
export { writeBranchSet, readBranchSets, branchesOf } from './branchStore';
