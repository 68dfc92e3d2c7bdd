// What a step would change, as data: the store operations a commit plan makes, and the look a
// step that runs under the lease takes at it when it only reports (--dry-run). The real steps
// compute their effects with the same functions; --dry-run prints them instead of applying them.

import { ConflictError } from '../errors.js';
import { describeHolder, holderKnownDead, leaseTtl, readCurrentLease } from '../job/lease.js';
import type { JobLayout } from '../job/layout.js';
import type { OpenJob } from '../job/open.js';
import { resolveLoc } from '../plan/apply.js';
import { singleOps, type PlanPhase } from '../plan/plan.js';
import type { StepEnv } from './env.js';

/** One planned store operation, with URIs. */
export interface PlannedOperation {
  readonly op: string;
  readonly path?: string;
  readonly from?: string;
  readonly to?: string;
  readonly dir?: boolean;
  /** A file move that replaces an old file of the same name in the target (an overwrite). */
  readonly replace?: boolean;
  readonly phase?: number;
}

/** What a commit plan does, counted: what a dry run of commit-job reports beside its operations. */
export interface PlanSummary {
  readonly directoriesMovedWhole: number;
  readonly filesMovedOneByOne: number;
  readonly filesCopied: number;
  readonly displaced: readonly string[];
}

/**
 * A lease held by a process not known dead: the real step watches it for up to its TTL and exits 4 if it is renewed;
 * one look cannot tell, so the dry run exits 4 saying so.
 */
export async function checkUnlocked(env: StepEnv, layout: JobLayout): Promise<void> {
  const current = await readCurrentLease(env.store, layout);
  const mine = current?.record?.host === env.host && current.record.pid === env.pid;
  if (current && !mine && !holderKnownDead(current, env)) {
    throw new ConflictError({
      reason: 'lease-held',
      job: env.store.toUri(layout.root),
      holder: describeHolder(current.record),
      takeoverSeconds: Math.round(leaseTtl(current, env) / 1000),
    });
  }
}

export function operationsOf(env: StepEnv, open: OpenJob, phases: readonly PlanPhase[], from = 0): PlannedOperation[] {
  const ctx = { stagingPath: open.layout.root, targetPath: open.job.targetPath };
  const uri = (loc: string) => env.store.toUri(resolveLoc(ctx, loc));
  return phases.slice(from).flatMap((phase, i) =>
    [...singleOps(phase)].map((op): PlannedOperation => {
      const at = { phase: from + i + 1 };
      if (op.op === 'mkdir') return { op: 'mkdir', path: uri(op.path), ...at };
      if (op.op === 'delete') return { op: 'delete', path: uri(op.path), dir: op.dir, ...at };
      if (op.op === 'swap')
        return { op: 'swap', path: uri(op.path), from: uri(op.from), to: uri(op.trash), dir: op.dir, ...at };
      // A pending upload is completed where it waits: nothing is copied.
      if (op.op === 'copy' && op.upload) return { op: 'complete', path: uri(op.to), ...at };
      return {
        op: op.op,
        from: uri(op.from),
        to: uri(op.to),
        ...(op.op === 'move' && op.dir ? { dir: true } : {}),
        ...(op.op === 'move' && op.replace ? { replace: true } : {}),
        ...at,
      };
    }),
  );
}

export function summaryOf(env: StepEnv, open: OpenJob, phases: readonly PlanPhase[]): PlanSummary {
  const ops = phases.flatMap((p) => [...singleOps(p)]);
  const ctx = { stagingPath: open.layout.root, targetPath: open.job.targetPath };
  return {
    directoriesMovedWhole: ops.filter((o) => (o.op === 'move' && o.dir) || (o.op === 'swap' && o.dir)).length,
    filesMovedOneByOne: ops.filter((o) => o.op === 'move' && !o.dir).length,
    filesCopied: ops.filter((o) => o.op === 'copy' && !o.upload).length,
    // What the target loses: a swapped or deleted path, an old file a new one replaces in place.
    displaced: ops.flatMap((o) => {
      const old =
        o.op === 'swap' || (o.op === 'delete' && o.path.startsWith('t:'))
          ? o.path
          : o.op === 'move' && o.replace
            ? o.to
            : null;
      return old === null ? [] : [env.store.toUri(resolveLoc(ctx, old))];
    }),
  };
}
