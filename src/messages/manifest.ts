// The messages of CorruptManifestError (exit 1): the file, the field when it is one field, and the problem.

/** What is wrong with a manifest (a file of the job's own: _job.yaml, a claim, a plan, a table-log entry…). */
export type ManifestDetail = {
  readonly reason: 'unclassified';
  readonly file: string;
  readonly field: string | null;
  readonly problem: string;
};

export function manifestMessage(d: ManifestDetail): string {
  switch (d.reason) {
    case 'unclassified':
      return `${d.file}: ${d.field === null ? '' : `field '${d.field}' `}${d.problem}`;
  }
}
