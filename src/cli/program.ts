// The command tree: global options and help, then one command per file under commands/.

import { Command } from 'commander';
import { abortCommand } from './commands/abort.js';
import { adoptCommand } from './commands/adopt.js';
import { cleanOrphansCommand } from './commands/clean-orphans.js';
import { commitJobCommand } from './commands/commit-job.js';
import { commitTaskCommand } from './commands/commit-task.js';
import { completionCommand } from './commands/completion.js';
import { jobsCommand } from './commands/jobs.js';
import { recoverCommand } from './commands/recover.js';
import { stageCommand } from './commands/stage.js';
import { statusCommand } from './commands/status.js';
import type { Run } from './runtime.js';
import { packageVersion } from './version.js';

const COMMANDS = [
  stageCommand,
  commitTaskCommand,
  commitJobCommand,
  abortCommand,
  recoverCommand,
  statusCommand,
  jobsCommand,
  cleanOrphansCommand,
  adoptCommand,
  completionCommand,
];

const HELP_AFTER = `
Targets: /data/sales, file:///data/sales, s3://bucket/wh/sales, hdfs://nn:9870/wh/sales,
webhdfs://…, swebhdfs://…, hdfs://NAMESERVICE/… (name nodes listed in the config).

Example:
  JOB=$(stagecommit stage --target /data/sales --mode overwrite --partition-by dt --tasks 1)
  stagecommit stage --job "$JOB" --task 0 --partition dt=2026-11-30 part-0.parquet
  stagecommit commit-task --job "$JOB" --task 0 && stagecommit commit-job --job "$JOB"

Exit codes: 0 done, 1 failed (store error, damaged manifest: nothing changed, unless the message
says the job is past its commit point: recover finishes it), 2 bad usage or input (or a finished job),
3 commit denied (another attempt won, or it was aborted), 4 retry later (locked by a live
step, another job still committing the same partitions), 5 incomplete (declared tasks
missing), 6 blocked: will never pass as it is (append clash, create target appeared, two
tasks wrote one path, a partition replaced by another job, wrong state: do what the message
says), 130/143 stopped by SIGINT/SIGTERM (run the step again). With --json an error's
"retryable" is true for 4 alone. JOB defaults to $STAGECOMMIT_JOB.

Install check: stagecommit --version --verbose (the version, the package's path and its
library, loaded), from any directory.

Start-up: the installed CLI keeps the code V8 compiled for it in $XDG_CACHE_HOME/stagecommit
(~/.cache/stagecommit) and starts faster from it; STAGECOMMIT_CODE_CACHE=off turns that off.`;

/** `--version`: the version, or under --json the document `{ ok, version }`. */
export function versionText(json: boolean): string {
  const version = packageVersion();
  return json ? JSON.stringify({ ok: true, version }, null, 2) : version;
}

export function buildProgram(run: Run, json = false): Command {
  const program = new Command('stagecommit')
    .description('All-or-nothing batch writes into table directories (local filesystem, S3, HDFS).')
    .version(versionText(json))
    .option('--json', 'print the result as one JSON document on stdout')
    .option(
      '--config <file>',
      'YAML config file (default: $STAGECOMMIT_CONFIG); read over ~/.config/stagecommit/config.yaml and /etc/stagecommit/config.yaml',
    )
    .option('-q, --quiet', 'print nothing but the result and errors')
    .option('-v, --verbose', 'print each phase and the store operation counts on stderr')
    .option('--allow-unsigned-job', "accept a hand-written _job.yaml without its 'end:' check line")
    .showSuggestionAfterError()
    .addHelpText('after', HELP_AFTER);
  for (const make of COMMANDS) program.addCommand(make(run));
  return program;
}
