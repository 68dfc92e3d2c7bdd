// `_SUCCESS` in the JSON format of Hadoop's S3A and manifest committers, plus our partitions.

import type { OpCounts } from '../store/instrumented.js';
import type { JobManifest } from './job.js';

export const SUCCESS_NAME = 'org.apache.hadoop.fs.s3a.commit.files.SuccessData/1';

export interface SuccessInput {
  readonly job: JobManifest;
  readonly nowMs: number;
  readonly hostname: string;
  readonly filenames: readonly string[];
  readonly files: number;
  readonly bytes: number;
  readonly partitionsWritten: readonly string[];
  readonly partitionsReplaced: readonly string[];
  readonly metrics: OpCounts;
  readonly targetUri: string;
}

export function successJson(s: SuccessInput): string {
  const metrics: Record<string, number> = { files: s.files, bytes: s.bytes };
  for (const [k, v] of Object.entries(s.metrics)) metrics[`op_${k}`] = v ?? 0;
  return (
    JSON.stringify(
      {
        name: SUCCESS_NAME,
        timestamp: s.nowMs,
        date: new Date(s.nowMs).toString(),
        hostname: s.hostname,
        committer: 'stagecommit',
        description: `stagecommit ${s.job.mode} commit (${s.job.algorithm}) of job ${s.job.jobId}`,
        jobId: s.job.jobId,
        jobIdSource: 'stagecommit',
        success: true,
        filenames: s.filenames.slice(0, 100).map((f) => `${s.targetUri.replace(/\/$/, '')}/${f}`),
        metrics,
        diagnostics: {
          mode: s.job.mode,
          algorithm: s.job.algorithm,
          partitionBy: s.job.partitionBy.join(','),
          // With mode, algorithm and partitionBy: what a rerun of the job id is checked against once the job is gone.
          partition: s.job.staticPartition.map((p) => `${p.column}=${p.value}`).join(','),
          tasks: s.job.tasks === undefined ? '' : String(s.job.tasks),
          appAttempt: String(s.job.appAttempt),
        },
        partitionsWritten: s.partitionsWritten,
        partitionsReplaced: s.partitionsReplaced,
      },
      null,
      2,
    ) + '\n'
  );
}
