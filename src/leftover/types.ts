// What an engine's leftover is made of, as the recogniser reports it (plain data, no store).

export type LeftoverKind = 'hadoop-temporary' | 'spark-staging' | 'hive-staging';

/** One entry under the leftover, path relative to it ('/'-separated). */
export interface ListedEntry {
  readonly path: string;
  readonly kind: 'file' | 'dir';
  readonly size: number;
  /** -1 when the store cannot date it (directories on S3). */
  readonly mtimeMs: number;
}

/** Output that becomes one committed task of the adopted job. */
export interface LeftoverSource {
  /** A task number for a committed task dir; a token for output the engine had already merged. */
  readonly task: string;
  /** The directory (relative to the leftover, '' for the leftover itself) holding the table-relative files. */
  readonly root: string;
  readonly files: readonly { readonly path: string; readonly size: number }[];
  readonly bytes: number;
}

/** Something the leftover holds that adopting throws away, and why. */
export interface Discarded {
  readonly path: string;
  readonly reason: string;
  readonly files: number;
  readonly bytes: number;
}

export interface Leftover {
  readonly kind: LeftoverKind;
  /** The engine's id for the job (Spark's job UUID, Hadoop's `<jt>_<n>`, Hive's query stamp), if known. */
  readonly engineJobId: string | null;
  /** Where the engine was when it stopped, in words. */
  readonly stage: string;
  /** True when the engine's job commit had begun: every task had committed by then. */
  readonly jobCommitBegun: boolean;
  readonly defaultMode: 'append' | 'overwrite';
  readonly sources: readonly LeftoverSource[];
  readonly discarded: readonly Discarded[];
  readonly appAttempts: readonly number[];
  /** Task numbers of the committed task dirs, in order. */
  readonly tasks: readonly string[];
  /** Numbers below the highest task found that have no committed output. */
  readonly gaps: readonly number[];
  readonly partitionBy: readonly string[];
  readonly partitions: readonly string[];
  readonly files: number;
  readonly bytes: number;
  /** The newest modification time of the leftover itself and every directory and file inside (-1: none is dated). */
  readonly newestMtimeMs: number;
}
