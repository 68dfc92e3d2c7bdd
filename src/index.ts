// The library: one function per CLI form, taking the long flags in camelCase, returning what
// `--json` prints, throwing a StageCommitError subclass (kind, reason, detail, exitCode) on failure.
//
// Adding an operation: a file in src/api/ (options and their table, document, the function over
// a Session made with operation() of src/api/options.ts),
// a line below, and a command file in src/cli/commands/ that calls it and renders.

import { loadConfig } from './cli/config.js';
import * as api from './api/index.js';
import { asStageCommitError } from './errors.js';
import { checkOptions, LIBRARY_OPTIONS, type Done, type Operation } from './api/options.js';
import { Session, type ProgressEvent } from './api/session.js';

export {
  StageCommitError,
  /** The name the library exported before each error class was exported: the same class. */
  StageCommitError as StagecommitError,
  UsageError,
  CommitDeniedError,
  ConflictError,
  BlockedError,
  IncompleteError,
  CorruptManifestError,
  StoreError,
  InternalError,
  ExitCode,
  isRetryable,
} from './errors.js';
export type {
  AnyStageCommitError,
  ErrorKind,
  ErrorContext,
  UsageDetail,
  DeniedDetail,
  ConflictDetail,
  IncompleteDetail,
  ManifestDetail,
  StoreDetail,
  StoreErrorReason,
  InternalDetail,
} from './errors.js';
export type { ErrorDoc, ErrorDocError } from './api/errors.js';
export type { ProgressEvent } from './api/session.js';
export type * from './api/index.js';

/** Settings every call takes besides its own options. */
export interface LibraryOptions {
  /** A YAML config file, as --config (default: $STAGECOMMIT_CONFIG). */
  readonly config?: string;
  /** Environment for store settings and credentials (default: process.env). */
  readonly env?: NodeJS.ProcessEnv;
  /** Relative paths are resolved against it (default: process.cwd()). */
  readonly cwd?: string;
  /** Phases, counts done of total, warnings, as the step runs. */
  readonly onProgress?: (e: ProgressEvent) => void;
  /** Accept a hand-written _job.yaml without its 'end:' check line. */
  readonly allowUnsignedJob?: boolean;
}

/** Checks the options (names, types, required ones: UsageError before anything is opened), then runs fn. */
function call<O extends object, D>(fn: Operation<O, D>): (opts: O & LibraryOptions) => Promise<Done<D>> {
  return async (opts) => {
    try {
      checkOptions(fn.op, { ...fn.options, ...LIBRARY_OPTIONS }, opts);
      const { config, env: envOpt, cwd, onProgress, allowUnsignedJob, ...own } = opts;
      const env = envOpt ?? process.env;
      const session = new Session({
        config: loadConfig(config ?? env.STAGECOMMIT_CONFIG, env),
        env,
        cwd: cwd ?? process.cwd(),
        onProgress,
        allowUnsignedJob,
      });
      return await fn(session, own as unknown as O);
    } catch (e) {
      throw asStageCommitError(e);
    }
  };
}

/** Starts a job (`stage --target`); `handle` names it in every later call. */
export const stage = call(api.stage);
/** Puts files into a task attempt (`stage --job --task FILE…`). */
export const stageFiles = call(api.stageFiles);
/** Creates a task attempt's dir for a writer that writes there itself (`stage --print-path`). */
export const attemptPath = call(api.attemptPath);
export const commitTask = call(api.commitTask);
export const commitJob = call(api.commitJob);
export const abort = call(api.abort);
export const recover = call(api.recover);
export const status = call(api.status);
export const cleanOrphans = call(api.cleanOrphans);
/** `commit-job --dry-run`, `abort --dry-run`, `recover --dry-run`: the real step's checks and plan; nothing changed. */
export const commitJobDryRun = call(api.commitJobDryRun);
export const abortDryRun = call(api.abortDryRun);
export const recoverDryRun = call(api.recoverDryRun);
/** Turns a killed Hadoop, Spark or Hive job's leftover into a stagecommit job (`adopt`). */
export const adopt = call(api.adopt);
/** The jobs of tables or staging roots (`jobs`). */
export const jobs = call(api.jobs);
