// What every API call runs with: settings, store opening, the step environment around one store.
// The CLI builds one per command line; the library (src/index.ts) one per call.

import os from 'node:os';
import { UsageError } from '../errors.js';
import { InstrumentedStore, type MutationHook, type OpCounts } from '../store/instrumented.js';
import { parseUri, StoreOpener, type ParsedUri } from '../store/resolve.js';
import type { Store } from '../store/types.js';
import { isPidAliveLocal, localHost, type StepEnv, type StepEvent } from '../steps/env.js';

/** Progress and warnings from a running step: phases, counts done of total, warnings. */
export type ProgressEvent = StepEvent;

/** The loaded config (the CLI's --config file, or the library's `config` option). */
export interface SessionConfig {
  readonly stagingRoot?: string;
  readonly concurrency: number;
  readonly leaseTtlSeconds: number;
  /** The whole document: store settings (s3:, hdfs:) are read from it. */
  readonly raw: Record<string, unknown>;
}

export interface SessionInit {
  readonly config: SessionConfig;
  /** Environment for store settings and credentials (AWS_*, HADOOP_*), and the user name. */
  readonly env: NodeJS.ProcessEnv;
  /** Relative paths in targets and files are resolved against it. */
  readonly cwd: string;
  readonly onProgress?: (e: ProgressEvent) => void;
  readonly allowUnsignedJob?: boolean;
  /** Test hook: runs before every store mutation. */
  readonly beforeMutation?: MutationHook;
}

export interface Location {
  readonly uri: ParsedUri;
  readonly store: Store;
  readonly path: string;
}

export class Session {
  private readonly opener: StoreOpener;
  private instrumented: InstrumentedStore | undefined;

  constructor(readonly init: SessionInit) {
    this.opener = new StoreOpener({
      config: init.config.raw,
      env: init.env,
      warn: (message) => this.emit({ type: 'warn', message }),
    });
  }

  get config(): SessionConfig {
    return this.init.config;
  }

  /**
   * A URI or path → its store and the path inside it (a local path with its links resolved; with
   * `followLink` false, all but its last name, for a step that refuses a link given to it).
   */
  async location(raw: string, followLink = true): Promise<Location> {
    const uri = parseUri(raw, this.init.cwd);
    return { uri, ...(await this.opener.open(uri, followLink)) };
  }

  /** The job a handle names (what `stage` returned as `handle`). */
  async job(handle: string | undefined): Promise<Location> {
    if (!handle) throw new UsageError({ reason: 'no-job-given' });
    return this.location(handle);
  }

  /** The step environment around one store; every call goes through the counting wrapper. */
  stepEnv(store: Store, concurrency?: number): StepEnv {
    const inst = new InstrumentedStore(store, this.init.beforeMutation);
    this.instrumented = inst;
    return {
      store: inst,
      user: this.init.env.USER ?? os.userInfo().username,
      host: localHost(),
      pid: process.pid,
      now: () => Date.now(),
      monotonicNow: () => performance.now(),
      concurrency: concurrency ?? this.init.config.concurrency,
      leaseTtlMs: this.init.config.leaseTtlSeconds * 1000,
      isPidAlive: isPidAliveLocal,
      emit: (e) => this.emit(e),
      metrics: () => inst.metrics(),
      allowUnsignedJob: this.init.allowUnsignedJob,
    };
  }

  /** A warning of the call's own (printed unless --quiet). */
  warn(message: string): void {
    this.emit({ type: 'warn', message });
  }

  /**
   * Progress goes to the caller's callback; a callback that throws (or returns a promise that
   * rejects) is ignored: it must not interrupt a step, least of all after its commit point.
   */
  private emit(e: ProgressEvent): void {
    const cb = this.init.onProgress;
    if (!cb) return;
    try {
      const r: unknown = cb(e);
      if (r instanceof Promise) r.catch(() => {});
    } catch {
      // ignored, as above
    }
  }

  /** Store operations counted by the last step environment (for --verbose). */
  get counts(): OpCounts | undefined {
    return this.instrumented?.counts;
  }
}

/** An epoch-milliseconds time as ISO-8601 (UTC), the form every `…At` field has. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
