// The pairs of steps that can meet on one job or one table, each from the state it needs: a
// small table (partition dt=1 to be overwritten, dt=2 left alone), one or two jobs of one or two
// tasks of one or two files.

import { DAY_MS, steps, type JobDef, type StepDef, type TaskDef } from './steps.js';

export interface Scenario {
  readonly name: string;
  readonly jobs: readonly (JobDef & { readonly taskDefs: readonly TaskDef[] })[];
  /** Run one after another, alone, before the processes start. */
  readonly setup: readonly StepDef[];
  /** The processes that meet: each runs one step. */
  readonly procs: readonly StepDef[];
  /** Time that passes between the setup and the processes (clean-orphans: the job is old). */
  readonly idleMs?: number;
  /** The setup damages the staging root by hand: a step may then say so (exit 1) and leave it to a person. */
  readonly damaged?: boolean;
  /** A process stages the job's id again once it ended: its steps' promises are about the job they opened. */
  readonly idReused?: boolean;
  /** A Hadoop FileOutputCommitter leftover lies in the table (adopt). */
  readonly leftover?: boolean;
}

export const HADOOP_LEFTOVER = '/w/sales/_temporary';

const t0: TaskDef = { task: 't0', attempt: 0, files: ['a.csv'] };
const t0b: TaskDef = { task: 't0', attempt: 1, files: ['a.csv'] };
/** More files staged into t0's attempt 0 (a writer adding to it). */
const t0more: TaskDef = { task: 't0', attempt: 0, files: ['d.csv'] };
const t1: TaskDef = { task: 't1', attempt: 0, files: ['b.csv', 'c.csv'] };
const J = 'j1';
const J2 = 'j2';
const job1 = { id: J, taskDefs: [t0, t1] };
const job1one = { id: J, taskDefs: [t0] };

const staged = (id: string, ...ts: TaskDef[]): StepDef[] => [
  steps.stageJob({ id }),
  ...ts.map((t) => steps.stage(id, t)),
];
const committed = (id: string, ...ts: TaskDef[]): StepDef[] => [
  ...staged(id, ...ts),
  ...ts.map((t) => steps.commitTask(id, t)),
];

/** clean-orphans --delete beside each step, the job a day old (so stale by its age alone). */
function withCleanOrphans(): Scenario[] {
  const base = { jobs: [job1one], idleMs: DAY_MS + 3600_000 };
  const co = steps.cleanOrphans();
  return [
    { ...base, name: 'clean-orphans / stage', setup: staged(J, t0), procs: [co, steps.stage(J, t0b)] },
    { ...base, name: 'clean-orphans / commit-task', setup: staged(J, t0), procs: [co, steps.commitTask(J, t0)] },
    { ...base, name: 'clean-orphans / commit-job', setup: committed(J, t0), procs: [co, steps.commitJob(J)] },
    { ...base, name: 'clean-orphans / abort', setup: committed(J, t0), procs: [co, steps.abort(J)] },
    { ...base, name: 'clean-orphans / abort --task', setup: staged(J, t0), procs: [co, steps.abortTask(J, t0)] },
    { ...base, name: 'clean-orphans / recover', setup: committed(J, t0), procs: [co, steps.recover(J)] },
    {
      ...base,
      name: 'clean-orphans / stage job',
      setup: [],
      idleMs: 0,
      procs: [co, ...staged(J, t0).slice(0, 1)],
    },
  ];
}

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'commit-task / commit-task (one attempt)',
    jobs: [job1one],
    setup: staged(J, t0),
    procs: [steps.commitTask(J, t0), steps.commitTask(J, t0)],
  },
  {
    name: 'commit-task / commit-task (two attempts)',
    jobs: [job1one],
    setup: staged(J, t0, t0b),
    procs: [steps.commitTask(J, t0), steps.commitTask(J, t0b)],
  },
  {
    name: 'commit-task / abort --task',
    jobs: [job1one],
    setup: staged(J, t0),
    procs: [steps.commitTask(J, t0), steps.abortTask(J, t0)],
  },
  {
    name: 'commit-task / recover',
    jobs: [job1],
    setup: [...committed(J, t1), steps.stage(J, t0)],
    procs: [steps.commitTask(J, t0), steps.recover(J)],
  },
  {
    name: 'commit-task / commit-job',
    jobs: [job1],
    setup: [...committed(J, t1), steps.stage(J, t0)],
    procs: [steps.commitTask(J, t0), steps.commitJob(J)],
  },
  {
    name: 'commit-task / abort',
    jobs: [job1one],
    setup: staged(J, t0),
    procs: [steps.commitTask(J, t0), steps.abort(J)],
  },
  {
    name: 'stage / commit-task (other attempt)',
    jobs: [job1one],
    setup: staged(J, t0),
    procs: [steps.stage(J, t0b), steps.commitTask(J, t0)],
  },
  {
    name: 'stage / commit-task (same attempt)',
    jobs: [job1one],
    setup: staged(J, t0),
    procs: [steps.stage(J, t0more), steps.commitTask(J, t0)],
  },
  {
    name: 'stage / commit-job',
    jobs: [job1],
    setup: committed(J, t0),
    procs: [steps.stage(J, t1), steps.commitJob(J)],
  },
  {
    name: 'stage / abort',
    jobs: [job1],
    setup: committed(J, t0),
    procs: [steps.stage(J, t1), steps.abort(J)],
  },
  {
    name: 'stage / recover',
    jobs: [job1],
    setup: committed(J, t0),
    procs: [steps.stage(J, t1), steps.recover(J)],
  },
  {
    name: 'commit-job / commit-job',
    jobs: [job1one],
    setup: committed(J, t0),
    procs: [steps.commitJob(J), steps.commitJob(J)],
  },
  {
    name: 'commit-job / recover',
    jobs: [job1one],
    setup: committed(J, t0),
    procs: [steps.commitJob(J), steps.recover(J)],
  },
  {
    name: 'commit-job / abort',
    jobs: [job1one],
    setup: committed(J, t0),
    procs: [steps.commitJob(J), steps.abort(J)],
  },
  {
    name: 'recover / abort',
    jobs: [job1],
    setup: [...committed(J, t0), steps.stage(J, t1)],
    procs: [steps.recover(J), steps.abort(J)],
  },
  {
    name: 'recover / recover',
    jobs: [job1],
    setup: [...committed(J, t0), steps.stage(J, t1)],
    procs: [steps.recover(J), steps.recover(J)],
  },
  {
    name: 'commit-task / abort --task / recover',
    jobs: [job1],
    setup: [...committed(J, t1), steps.stage(J, t0)],
    procs: [steps.commitTask(J, t0), steps.abortTask(J, t0), steps.recover(J)],
  },
  {
    // The job aborted and its id staged again while a commit-task of the first job still runs
    // (protocol.md §5.14): the late run's records must not stay in the new job.
    name: 'commit-task / abort / stage job (id used again)',
    jobs: [job1one],
    idReused: true,
    setup: staged(J, t0),
    procs: [steps.commitTask(J, t0), steps.abort(J), steps.stageJob({ id: J, tasks: 1 })],
  },
  {
    name: 'abort --task / recover',
    jobs: [job1],
    setup: [...committed(J, t1), steps.stage(J, t0)],
    procs: [steps.abortTask(J, t0), steps.recover(J)],
  },
  {
    name: 'two jobs commit-job over one partition',
    jobs: [job1one, { id: J2, taskDefs: [t0] }],
    setup: [...committed(J, t0), ...committed(J2, t0)],
    procs: [steps.commitJob(J), steps.commitJob(J2)],
  },
  ...withCleanOrphans(),
  {
    // An older overwrite staged before a newer one committed; the newer one's log entry is deleted
    // by hand and its .done marker left: the older one must still not commit over the newer data.
    name: 'two jobs, the newer entry deleted by hand',
    jobs: [job1one, { id: J2, taskDefs: [t0] }],
    damaged: true,
    setup: [
      ...committed(J, t0),
      ...committed(J2, t0),
      steps.commitJob(J2),
      steps.remove('/w/.stagecommit/sales/_log/00000000000000000000.yaml'),
    ],
    procs: [steps.commitJob(J), steps.recover(J2)],
  },
  {
    name: 'clean-orphans / commit-task (fresh job)',
    jobs: [job1one],
    setup: staged(J, t0),
    procs: [steps.cleanOrphans(), steps.commitTask(J, t0)],
  },
  {
    name: 'adopt / commit-job',
    jobs: [job1one],
    leftover: true,
    idleMs: 3600_000,
    setup: committed(J, t0),
    procs: [steps.adopt('/w/sales/_temporary'), steps.commitJob(J)],
  },
  {
    name: 'adopt / clean-orphans',
    jobs: [],
    leftover: true,
    idleMs: DAY_MS + 3600_000,
    setup: [],
    procs: [steps.adopt('/w/sales/_temporary'), steps.cleanOrphans()],
  },
];

/** Three or more processes on one table, for the random part. */
export const CROWDS: readonly Scenario[] = [
  {
    name: 'crowd: tasks, commit-job, recover',
    jobs: [job1],
    setup: staged(J, t0, t1, t0b),
    procs: [
      steps.commitTask(J, t0),
      steps.commitTask(J, t1),
      steps.commitTask(J, t0b),
      steps.commitJob(J),
      steps.recover(J),
    ],
  },
  {
    name: 'crowd: two jobs, recover, clean-orphans',
    jobs: [job1one, { id: J2, taskDefs: [t0] }],
    setup: [...committed(J, t0), ...committed(J2, t0)],
    procs: [steps.commitJob(J), steps.commitJob(J2), steps.recover(J), steps.cleanOrphans()],
  },
  {
    name: 'crowd: commit-job, abort, recover',
    jobs: [job1],
    setup: [...committed(J, t0, t1)],
    procs: [steps.commitJob(J), steps.recover(J), steps.abort(J), steps.commitJob(J)],
  },
];
