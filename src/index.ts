// The library entry (`import … from 'stagecommit'`): the protocol steps, their inputs and results,
// and the typed errors. A minimal surface until the library API lands (issue 12 item 2).

export { stageJob, type StageJobInput, type StageJobResult } from './steps/stage-job.js';
export { stageFiles, type StageFilesInput, type StageFilesResult, type StagedSource } from './steps/stage-files.js';
export { commitTask, type CommitTaskInput, type CommitTaskResult } from './steps/commit-task.js';
export { commitJob, type CommitJobInput, type CommitJobResult } from './steps/commit-job.js';
export { abort, type AbortInput, type AbortResult } from './steps/abort.js';
export { recover, type RecoverInput, type RecoverResult } from './steps/recover.js';
export { status, type StatusResult } from './steps/status.js';
export { cleanOrphans, type CleanOrphansInput, type CleanOrphansResult } from './steps/clean-orphans.js';
export type { StepEnv, StepEvent } from './steps/env.js';
export { parseUri, StoreOpener, type ParsedUri, type StoreSettings } from './store/resolve.js';
export type { Store } from './store/types.js';
export { ExitCode, StageCommitError, UsageError, CommitDeniedError, ConflictError, IncompleteError, CorruptManifestError, StoreError } from './errors.js';
