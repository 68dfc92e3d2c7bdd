import { stage, stageFiles, commitTask, commitJob, abort } from 'stagecommit';

const target = process.env.TARGET ?? '/data/sales';
const day = process.env.DAY ?? '2026-11-30';
const extracted = [
  ['orders.csv', 'id,amount\n1,9.50\n'],
  ['refunds.csv', 'id,amount\n7,-2.00\n'],
];

const { handle: job } = await stage({ target, mode: 'overwrite', partitionBy: 'dt', tasks: extracted.length });
try {
  for (const [task, [name, rows]] of extracted.entries()) {
    await stageFiles({ job, task, partition: [`dt=${day}`], files: [{ name, data: rows.trim() + '\n' }] });
    await commitTask({ job, task });
  }
  const done = await commitJob({
    job,
    onProgress: (e) => e.type === 'progress' && console.error(`${e.done}/${e.total}`),
  });
  console.log(`published ${done.files} file(s) into ${done.target}`);
} catch (e) {
  await abort({ job }).catch(() => {});
  console.error(`stagecommit: ${e.message} (exit ${e.exitCode}, ${e.kind} ${e.reason})`);
  process.exitCode = e.exitCode;
}
