// Where everything lives in a staging dir (protocol.md §2.1), with Hadoop's names.

import { posix } from 'node:path';

export const JOB_FILE = '_job.yaml';
/** The plan as written before plans had names of their own: read only for a job already committing. */
export const LEGACY_PLAN_FILE = '_commit.yaml';
/** Commit plans, each under a name never used again (protocol.md §2.2). */
export const PLAN_DIR = '_plan';
export const LEASE_PREFIX = '_lease.';
export const SUCCESS_FILE = '_SUCCESS';
/** Rewritten by each resume of a job (under its lease): the age clean-orphans judges starts again. */
export const RESUMED_FILE = '_resumed.yaml';
export const OUTPUT_DIR = '_output';
export const TRASH_DIR = '_trash';
/** How many phases of the commit plan are done (so a replay never re-runs a finished phase). */
export const PROGRESS_FILE = '_commit.progress';
/** Where `adopt` renames an engine's leftover: its committed output stays put inside (protocol.md §6.2). */
export const ADOPTED_DIR = '_adopted';
/** On stores without directories, marks an attempt dir that `stage --print-path` made (never output). */
export const ATTEMPT_MARKER = '.stagecommit-attempt';

export function taskAttemptName(jobId: string, task: string, attempt: number): string {
  return `attempt_${jobId}_${task}_${attempt}`;
}

/** The task of an attempt dir name `attempt_<jobId>_<task>_<n>`, or null for other names. */
export function taskOfAttempt(jobId: string, name: string): string | null {
  const prefix = `attempt_${jobId}_`;
  if (!name.startsWith(prefix)) return null;
  const rest = name.slice(prefix.length);
  const cut = rest.lastIndexOf('_');
  return cut > 0 && /^\d+$/.test(rest.slice(cut + 1)) ? rest.slice(0, cut) : null;
}

export class JobLayout {
  constructor(readonly root: string) {}

  get jobFile(): string {
    return posix.join(this.root, JOB_FILE);
  }
  get planDir(): string {
    return posix.join(this.root, PLAN_DIR);
  }
  planFile(name: string): string {
    return posix.join(this.root, PLAN_DIR, `${name}.yaml`);
  }
  get legacyPlanFile(): string {
    return posix.join(this.root, LEGACY_PLAN_FILE);
  }
  get progressFile(): string {
    return posix.join(this.root, PROGRESS_FILE);
  }
  get temporary(): string {
    return posix.join(this.root, '_temporary');
  }
  /** The merge area in which a multi-task output becomes one tree before it reaches an absent target. */
  get output(): string {
    return posix.join(this.root, OUTPUT_DIR);
  }
  /** Where an overwrite parks the data it displaces until the new data is in place. */
  get trash(): string {
    return posix.join(this.root, TRASH_DIR);
  }

  appAttemptDir(app: number): string {
    return posix.join(this.temporary, String(app));
  }
  attemptsDir(app: number): string {
    return posix.join(this.appAttemptDir(app), '_temporary');
  }
  attemptDir(app: number, taskAttempt: string): string {
    return posix.join(this.attemptsDir(app), taskAttempt);
  }
  committedTaskDir(app: number, task: string): string {
    return posix.join(this.appAttemptDir(app), task);
  }
  claimsDir(app: number): string {
    return posix.join(this.appAttemptDir(app), '_claims');
  }
  claimFile(app: number, task: string): string {
    return posix.join(this.claimsDir(app), `${task}.yaml`);
  }
  /** One file per task attempt, created exclusively: commit or abort, whichever comes first (protocol.md §5.9). */
  decisionsDir(app: number): string {
    return posix.join(this.appAttemptDir(app), '_decisions');
  }
  decisionFile(app: number, taskAttempt: string): string {
    return posix.join(this.decisionsDir(app), `${taskAttempt}.yaml`);
  }

  /** A path inside the staging dir, relative to its root (how manifests record paths). */
  relative(p: string): string {
    return posix.relative(this.root, p);
  }
  resolve(rel: string): string {
    return posix.join(this.root, rel);
  }
}

/** The hidden directory beside a target that holds its default staging dirs and its table log. */
export const STAGING_PARENT = '.stagecommit';

/**
 * Whether a path is deep enough to be a table: not the store's root, nor a whole bucket (paths
 * `namespaceDepth` deep or less). Only a table has a default staging root beside it.
 */
export function canHoldTable(path: string, namespaceDepth = 0): boolean {
  return path.split('/').filter(Boolean).length > namespaceDepth;
}

/** The default staging dir: a hidden sibling of the target, `<parent>/.stagecommit/<table>/<jobId>`. */
export function defaultStagingRoot(targetPath: string): string {
  return posix.join(posix.dirname(targetPath), STAGING_PARENT, posix.basename(targetPath));
}

/** The target of a staging dir in the default layout, or null when it is elsewhere. */
export function targetOfDefaultStaging(stagingPath: string): { targetPath: string; jobId: string } | null {
  const parts = stagingPath.split('/');
  const n = parts.length;
  if (n < 4 || parts[n - 3] !== STAGING_PARENT) return null;
  return { targetPath: posix.join(parts.slice(0, n - 3).join('/') || '/', parts[n - 2]!), jobId: parts[n - 1]! };
}

/**
 * The default layout's parents of a staging dir (`<parent>/.stagecommit/<table>`, then `.stagecommit`); [] elsewhere.
 */
export function defaultStagingParents(stagingPath: string): string[] {
  const table = posix.dirname(stagingPath);
  return posix.basename(posix.dirname(table)) === STAGING_PARENT ? [table, posix.dirname(table)] : [];
}

/** Where overwrite jobs record the partitions they replaced, for conflict detection. */
export function commitLogDir(targetPath: string): string {
  return posix.join(defaultStagingRoot(targetPath), '_log');
}
