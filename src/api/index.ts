// Every API operation over a Session: what the CLI commands and the library (src/index.ts) call.

export { stage, stageFiles, attemptPath } from './stage.js';
export type { StageOptions, StageDoc, AttemptOptions, StageFilesOptions, StageFilesDoc, FileSource } from './stage.js';
export { commitTask } from './commit-task.js';
export type { CommitTaskOptions, CommitTaskDoc } from './commit-task.js';
export { commitJob, commitJobDryRun } from './commit-job.js';
export type { CommitJobOptions, CommitJobDoc, CommitJobDryRunDoc } from './commit-job.js';
export { abort, abortDryRun } from './abort.js';
export type { AbortOptions, AbortDoc, AbortDryRunDoc } from './abort.js';
export { recover, recoverDryRun } from './recover.js';
export type { RecoverOptions, RecoverDoc, RecoverDryRunDoc } from './recover.js';
export { status } from './status.js';
export type { StatusOptions, StatusDoc, StatusJob } from './status.js';
export { cleanOrphans } from './clean-orphans.js';
export type { CleanOrphansOptions, CleanOrphansDoc, LeftoverDoc } from './clean-orphans.js';
export { adopt } from './adopt.js';
export type { AdoptOptions, AdoptDoc } from './adopt.js';
export { jobs } from './jobs.js';
export type { JobsOptions, JobsDoc } from './jobs.js';
export type { PlannedOperation } from '../steps/effects.js';
export type { Done } from './options.js';
