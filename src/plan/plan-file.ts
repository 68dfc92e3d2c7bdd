// `_commit.yaml`: the persisted commit plan. Its existence is the commit point.

import { decodeManifest, encodeManifest, Fields, itemString } from '../manifest/codec.js';
import type { Store } from '../store/types.js';
import type { JobLayout } from '../job/layout.js';
import type { CommitPlan, PlanOp } from './plan.js';

const KIND = 'stagecommit/commit';
const VERSION = 1;
const OPS = ['mkdir', 'move', 'copy', 'swap', 'delete'] as const;

export interface PersistedPlan extends CommitPlan {
  readonly jobId: string;
  readonly appAttempt: number;
  readonly createdAtMs: number;
  /** Tasks whose output the plan publishes. */
  readonly tasks: readonly string[];
}

export function encodePlan(p: PersistedPlan): string {
  const ops: object[] = [];
  p.phases.forEach((phase, i) => phase.forEach((op) => ops.push({ phase: i, ...op })));
  return encodeManifest(
    {
      kind: KIND,
      version: VERSION,
      jobId: p.jobId,
      appAttempt: p.appAttempt,
      createdAt: new Date(p.createdAtMs).toISOString(),
      createdAtMs: p.createdAtMs,
      files: p.files,
      bytes: p.bytes,
      tasks: [...p.tasks],
      partitionsWritten: [...p.partitionsWritten],
      partitionsReplaced: [...p.partitionsReplaced],
      filenames: p.filenames.slice(0, 100),
    },
    { ops },
  );
}

export function decodePlan(text: string, file: string): PersistedPlan {
  const f = new Fields(decodeManifest(text, file), file);
  f.kind(KIND, VERSION);
  const strings = (field: string) =>
    f.array(field, (x) => {
      if (typeof x !== 'string') throw new Error('is not a string');
      return x;
    });
  const phases: PlanOp[][] = [];
  f.array('ops', (x) => {
    const o = x as Record<string, unknown>;
    const phase = o.phase;
    if (typeof phase !== 'number' || phase < 0 || !Number.isInteger(phase)) throw new Error("'phase' is missing or not a whole number");
    if (!OPS.includes(o.op as (typeof OPS)[number])) throw new Error(`'op' is '${String(o.op)}', expected one of ${OPS.join(', ')}`);
    for (const key of o.op === 'mkdir' || o.op === 'delete' ? ['path'] : o.op === 'swap' ? ['path', 'trash', 'from'] : ['from', 'to']) {
      itemString(o, key);
    }
    const { phase: _, ...op } = o;
    while (phases.length <= phase) phases.push([]);
    phases[phase]!.push(op as unknown as PlanOp);
  });
  return {
    jobId: f.string('jobId'),
    appAttempt: f.number('appAttempt'),
    createdAtMs: f.number('createdAtMs'),
    files: f.number('files'),
    bytes: f.number('bytes'),
    tasks: strings('tasks'),
    partitionsWritten: strings('partitionsWritten'),
    partitionsReplaced: strings('partitionsReplaced'),
    filenames: strings('filenames'),
    phases,
  };
}

export async function loadPlan(store: Store, layout: JobLayout): Promise<PersistedPlan | null> {
  const data = await store.readFile(layout.commitFile);
  if (data === null) return null;
  return decodePlan(data.toString('utf8'), store.toUri(layout.commitFile));
}
