// The messages of UsageError (exit 2): bad usage or bad input, and what to do, one reason each.

import { cleanOrphansDeleteCommand } from './advice.js';

/** What was wrong with the command, its options or its input. */
export type UsageDetail =
  /** The command line did not parse (commander's own words: an unknown option, a missing argument). */
  | { readonly reason: 'command-line'; readonly problem: string }
  // The library's options (`op`: the function), and numbers on the command line.
  /** Not an options object (`got`: what was given, as shown). */
  | { readonly reason: 'options-not-object'; readonly op: string; readonly got: string }
  /** An option of no such name (`near`: the closest known one, or null; `known`: every one). */
  | {
      readonly reason: 'option-unknown';
      readonly op: string;
      readonly option: string;
      readonly near: string | null;
      readonly known: readonly string[];
    }
  /** A library option that is required was not given (`what`: what it is). */
  | { readonly reason: 'option-missing'; readonly op: string; readonly option: string; readonly what: string }
  /** A library option of the wrong type or value (`what`: what it must be; `got`: as shown). */
  | {
      readonly reason: 'option-invalid';
      readonly op: string;
      readonly option: string;
      readonly what: string;
      readonly got: string;
    }
  /** A command-line number that is not a whole number (`positive`: 1 or more, else 0 or more). */
  | { readonly reason: 'number-invalid'; readonly option: string; readonly value: string; readonly positive: boolean }
  // A location given as a path or URI.
  /** A path or URI holding a line break (CR, LF, U+2028 or U+2029). */
  | { readonly reason: 'uri-line-break'; readonly uri: string }
  /** An empty path or URI. */
  | { readonly reason: 'uri-empty' }
  /** A file:// URI that does not name an absolute local path (`error`: why). */
  | { readonly reason: 'file-uri-invalid'; readonly uri: string; readonly error: string }
  /** A URI scheme stagecommit has no store for. */
  | { readonly reason: 'uri-scheme-unsupported'; readonly uri: string; readonly scheme: string }
  /** An S3 URI without a bucket. */
  | { readonly reason: 'uri-no-bucket'; readonly uri: string; readonly scheme: string }
  /** `hdfs:/wh/t` or `s3:/b/t`: a scheme without its '//'. */
  | { readonly reason: 'uri-missing-slashes'; readonly uri: string; readonly scheme: string }
  /** A '%' that is not a percent-escape of UTF-8. */
  | { readonly reason: 'uri-bad-percent'; readonly uri: string }
  // Partitions, tasks, attempts and paths inside the table.
  /** A --partition-by column that is not letters, digits and '_'. */
  | { readonly reason: 'partition-column-invalid'; readonly column: string }
  /** A --partition that is not COLUMN=VALUE. */
  | { readonly reason: 'partition-invalid'; readonly partition: string }
  /** A task id that is no number and no token, or a number with leading zeros. */
  | { readonly reason: 'task-id-invalid'; readonly task: string; readonly leadingZeros: boolean }
  /** An --attempt that is not a number. */
  | { readonly reason: 'attempt-invalid'; readonly attempt: string }
  /** A path relative to the table that is absolute, has an empty, '.' or '..' segment, or a NUL. */
  | {
      readonly reason: 'relative-path-invalid';
      readonly what: string;
      readonly path: string;
      readonly problem: 'absolute' | 'segment' | 'nul';
    }
  /** A file of a partitioned job that is not inside a partition, or a segment that is not COLUMN=VALUE. */
  | { readonly reason: 'file-outside-partitions'; readonly path: string; readonly columns: readonly string[] }
  /** A file of a partitioned job whose segment is not the `column`=VALUE its depth asks for. */
  | {
      readonly reason: 'file-partition-segment';
      readonly path: string;
      readonly segment: string;
      readonly column: string;
      readonly columns: readonly string[];
    }
  /** A file outside the job's static partition. */
  | { readonly reason: 'file-outside-static-partition'; readonly path: string; readonly staticPartition: string }
  // The config file and the store's settings.
  /** A setting of the wrong type or form: `must` says what it must be ("be a string"). */
  | { readonly reason: 'config-invalid'; readonly setting: string; readonly must: string }
  /** A file a setting names cannot be read. */
  | {
      readonly reason: 'config-file-unreadable';
      readonly setting: string;
      readonly file: string;
      readonly error: string;
    }
  /** webhdfs.basicAuth and Kerberos both configured. */
  | { readonly reason: 'basic-auth-with-kerberos' }
  /** webhdfs.kerberos.keytab without webhdfs.kerberos.principal. */
  | { readonly reason: 'keytab-without-principal' }
  /** webhdfs.basicAuth towards a name node that is not https. */
  | { readonly reason: 'basic-auth-in-clear'; readonly url: string }
  /** The S3 endpoint (`from`: where it was given) is not a URL, or not http(s). */
  | {
      readonly reason: 's3-endpoint-invalid';
      readonly endpoint: string;
      readonly from: string;
      readonly problem: 'not-url' | 'not-http';
    }
  /** AWS_PROFILE names a profile in neither AWS file. */
  | {
      readonly reason: 'aws-profile-missing';
      readonly profile: string;
      readonly configFile: string;
      readonly credentialsFile: string;
    }
  /** An AWS profile names a services section its config file does not have. */
  | {
      readonly reason: 'aws-services-missing';
      readonly profile: string;
      readonly section: string;
      readonly configFile: string;
    }
  // HDFS: its name nodes and credentials.
  /** hdfs:/// with no fs.defaultFS to name the cluster (`port`: the HTTP port a URI would give). */
  | { readonly reason: 'no-default-name-node'; readonly scheme: string; readonly port: number }
  /** The delegation token file HADOOP_TOKEN_FILE_LOCATION names cannot be read. */
  | { readonly reason: 'token-file-unreadable'; readonly file: string; readonly error: string }
  /** HADOOP_TOKEN_FILE_LOCATION names a file that is not a Hadoop token storage file. */
  | { readonly reason: 'token-file-invalid'; readonly file: string; readonly error: string }
  /** The cluster needs Kerberos, and the optional package 'kerberos' is not installed. */
  | { readonly reason: 'kerberos-package-missing'; readonly error: string }
  /** The KDC knows no HTTP/`host` principal for the name node. */
  | {
      readonly reason: 'kerberos-no-service-principal';
      readonly host: string;
      readonly nameNode: string;
      readonly error: string;
    }
  /** No usable ticket: from the keytab (`keytab`) as the principal, or (null) in the ticket cache. */
  | {
      readonly reason: 'kerberos-no-ticket';
      readonly host: string;
      readonly keytab: string | null;
      readonly principal: string;
      readonly error: string;
    }
  /** Kerberos (SPNEGO) failed otherwise (`error`: how). */
  | { readonly reason: 'kerberos-failed'; readonly host: string; readonly error: string }
  /** HTTP 401 from a name node: the credentials given (`gave`) were refused, or none were given. */
  | {
      readonly reason: 'auth-refused';
      readonly nameNode: string;
      readonly gave: 'delegation-token' | 'basic-auth' | 'kerberos' | 'none';
      /** With none given: whether the name node asked for Kerberos (Negotiate). */
      readonly negotiate: boolean;
    }
  // adopt: what an engine left that cannot become a job.
  /** A dir that is no Hadoop '_temporary', Spark '.spark-staging-<id>' or Hive '.hive-staging…' dir. */
  | { readonly reason: 'not-a-leftover'; readonly leftover: string }
  /** Nothing to adopt: the dir is empty (`stage` null), or holds no output at the stage it was left in. */
  | { readonly reason: 'leftover-empty'; readonly leftover: string; readonly stage: string | null }
  /** A Spark dynamic partition overwrite's leftover with a file outside any partition dir. */
  | { readonly reason: 'leftover-unpartitioned'; readonly leftover: string; readonly file: string }
  /** A leftover that is not laid out as its engine (`engine`) writes (`problem`: where not). */
  | { readonly reason: 'leftover-layout'; readonly leftover: string; readonly engine: string; readonly problem: string }
  /** Spark's files for partitions at custom locations, flat at the top (`files`: the first three). */
  | {
      readonly reason: 'leftover-custom-locations';
      readonly leftover: string;
      readonly count: number;
      readonly files: readonly string[];
    }
  /** A Hive staging dir without its finished output (`tops`: what it holds; `writing`: a _tmp. among them). */
  | {
      readonly reason: 'leftover-hive-unfinished';
      readonly leftover: string;
      readonly output: string;
      readonly tops: readonly string[];
      readonly writing: boolean;
    }
  /** A leftover file in a directory that is not a partition (column=value). */
  | {
      readonly reason: 'leftover-not-partition';
      readonly leftover: string;
      readonly file: string;
      readonly dir: string;
    }
  /** Leftover files under different partition columns. */
  | {
      readonly reason: 'leftover-mixed-partitions';
      readonly leftover: string;
      readonly first: string;
      readonly file: string;
      readonly columns: readonly string[];
      readonly others: readonly string[];
    }
  /** `status --tasks-to-run` of a job staged without --tasks: tasks never attempted are unknown to it. */
  | { readonly reason: 'tasks-not-declared'; readonly jobId: string }
  // stage: the target, the staging dir, the job's options.
  /** The target is the root of its store. */
  | { readonly reason: 'target-is-root' }
  /** A target that is a whole S3 bucket (`target`: its URI). */
  | { readonly reason: 'target-is-bucket'; readonly target: string }
  /** The target exists and is not a directory. */
  | { readonly reason: 'target-not-dir'; readonly target: string }
  /** --mode create towards a target that exists. */
  | { readonly reason: 'target-exists'; readonly target: string }
  /** One column given twice with --partition. */
  | { readonly reason: 'partition-given-twice'; readonly column: string }
  /** --partition-by names a column twice. */
  | { readonly reason: 'partition-by-repeats'; readonly columns: readonly string[] }
  /** A static --partition that is not the next of the leading --partition-by columns. */
  | { readonly reason: 'partition-not-leading'; readonly column: string; readonly columns: readonly string[] }
  /**
   * The target lies inside a table that has a table log (`table`): its jobs would keep a log of their
   * own and never meet that table's jobs (`partition`: the target's path below the table).
   */
  | {
      readonly reason: 'target-inside-table';
      readonly target: string;
      readonly table: string;
      readonly partition: string;
    }
  /** The target is inside the staging dir. */
  | { readonly reason: 'target-in-staging-dir'; readonly target: string; readonly stagingDir: string }
  /** A staging dir inside the target: it would make a create target exist, or readers would see it. */
  | { readonly reason: 'staging-dir-in-target'; readonly stagingDir: string; readonly why: 'create' | 'visible' }
  /** --algorithm v2 with --mode overwrite: a failed job would leave the old data deleted. */
  | { readonly reason: 'v2-with-overwrite' }
  /** The library's `tasks` that is not a positive whole number (`got`: as shown). */
  | { readonly reason: 'tasks-invalid'; readonly got: string }
  /** A --job-id of other characters than letters, digits, '.', '_' and '-', or too long. */
  | { readonly reason: 'job-id-invalid'; readonly jobId: string }
  /** A --staging-dir that holds files (`names`: the first three, as shown; `stagedJobId`: a job found there). */
  | {
      readonly reason: 'staging-dir-not-empty';
      readonly stagingDir: string;
      readonly names: string;
      readonly stagedJobId: string | null;
    }
  /** A --job-id whose staging dir another job holds. */
  | { readonly reason: 'job-id-in-use'; readonly jobId: string; readonly stagingDir: string }
  /** The job id's staging dir was made by another call meanwhile (`rerun`: a rerun then goes on with that job). */
  | { readonly reason: 'job-id-taken'; readonly jobId: string; readonly stagingDir: string; readonly rerun: boolean }
  /** A --job-id that names a job committed into the target already. */
  | {
      readonly reason: 'job-id-committed';
      readonly jobId: string;
      readonly target: string;
      readonly committedAt: string;
    }
  /** A staging dir or root whose path holds '%' or a control character: its job handle would not read back. */
  | {
      readonly reason: 'handle-unsafe-path';
      readonly what: string;
      readonly given: string;
      readonly holds: 'percent' | 'control';
    }
  /** A staging dir or root (`what`, `given`) on another store than the target (`store`: the target's). */
  | {
      readonly reason: 'staging-dir-other-store';
      readonly what: string;
      readonly given: string;
      readonly store: string;
    }
  // stage FILE… and stage DIR: the local files given.
  /** No such file (`notUtf8`: its name holds U+FFFD, so it may not be valid UTF-8). */
  | { readonly reason: 'source-missing'; readonly file: string; readonly notUtf8: boolean }
  /** A file to stage that is not a regular file. */
  | { readonly reason: 'source-not-file'; readonly file: string }
  /** A file or dir (`dir`) on a kernel filesystem (`filesystem`) whose files do not hold the size they report. */
  | { readonly reason: 'source-pseudo-fs'; readonly path: string; readonly filesystem: string; readonly dir: boolean }
  /** A symbolic link in a tree given to stage DIR. */
  | { readonly reason: 'source-symlink'; readonly file: string }
  /** A FIFO, socket or device in the tree of stage DIR. */
  | { readonly reason: 'source-special'; readonly file: string }
  /** A tree given to stage DIR that holds no files. */
  | { readonly reason: 'source-dir-empty'; readonly dir: string }
  /** stage DIR given with other files beside the dir. */
  | { readonly reason: 'source-dir-with-others'; readonly dir: string }
  // adopt: the leftover and the target given.
  /** The leftover given to adopt does not exist. */
  | { readonly reason: 'leftover-missing'; readonly leftover: string }
  /** The leftover given to adopt is a symbolic link. */
  | { readonly reason: 'leftover-symlink'; readonly leftover: string }
  /** The leftover given to adopt is not a directory. */
  | { readonly reason: 'leftover-not-dir'; readonly leftover: string }
  /** Something in the leftover that is neither a file nor a directory. */
  | { readonly reason: 'leftover-special-file'; readonly file: string }
  /** adopt's target is not a directory. */
  | { readonly reason: 'adopt-target-missing'; readonly target: string }
  /** The target is the leftover (`itself`) or inside it. */
  | { readonly reason: 'adopt-target-in-leftover'; readonly target: string; readonly itself: boolean }
  /** Without rename (S3) the leftover must be inside the target, under a '_' or '.' name. */
  | { readonly reason: 'leftover-outside-target'; readonly leftover: string; readonly target: string }
  /** The leftover and the staging dir are on different filesystems: one rename cannot move it. */
  | {
      readonly reason: 'leftover-other-filesystem';
      readonly leftover: string;
      readonly stagingDir: string;
      readonly target: string;
    }
  /** A file of the leftover that cannot be a job's file (`problem`: why, as written). */
  | { readonly reason: 'leftover-file-invalid'; readonly leftover: string; readonly problem: string }
  /** Left in its engine's job commit: merged output that --tasks cannot count. */
  | { readonly reason: 'leftover-tasks-uncountable'; readonly leftover: string }
  /** A leftover holding output of a task outside --tasks. */
  | {
      readonly reason: 'leftover-task-beyond';
      readonly leftover: string;
      readonly task: string;
      readonly tasks: number;
    }
  // HADOOP_CONF_DIR: its files, includes and properties (`file`: the file at fault).
  /** A property (`name`, `value`) naming a variable nothing defines. */
  | {
      readonly reason: 'hadoop-conf-unbound';
      readonly file: string;
      readonly name: string;
      readonly value: string;
      readonly variable: string;
    }
  /** A HADOOP_CONF_DIR property needing more than `limit` substitutions (a loop?). */
  | {
      readonly reason: 'hadoop-conf-substitution-loop';
      readonly file: string;
      readonly name: string;
      readonly value: string;
      readonly limit: number;
    }
  /** A HADOOP_CONF_DIR file that is not XML. */
  | { readonly reason: 'hadoop-conf-not-xml'; readonly file: string; readonly error: string }
  /** A HADOOP_CONF_DIR file that cannot be read. */
  | { readonly reason: 'hadoop-conf-unreadable'; readonly file: string; readonly error: string }
  /** HADOOP_CONF_DIR holds neither core-site.xml nor hdfs-site.xml. */
  | { readonly reason: 'hadoop-conf-empty'; readonly dir: string }
  /** An xi:include without href in HADOOP_CONF_DIR. */
  | { readonly reason: 'hadoop-include-no-href'; readonly file: string }
  /** xi:includes nested too deep (a loop of files?). */
  | { readonly reason: 'hadoop-include-too-deep'; readonly file: string; readonly href: string; readonly depth: number }
  /** More than `limit` xi:includes read. */
  | { readonly reason: 'hadoop-include-too-many'; readonly file: string; readonly href: string; readonly limit: number }
  /** An xi:include of a URL, not a file. */
  | { readonly reason: 'hadoop-include-url'; readonly file: string; readonly href: string }
  /** An xi:include that cannot be read and has no xi:fallback. */
  | {
      readonly reason: 'hadoop-include-unreadable';
      readonly file: string;
      readonly href: string;
      readonly error: string;
    }
  /** A name node of a name service without an address (`key`: the HTTP address property's prefix). */
  | {
      readonly reason: 'hadoop-name-node-address';
      readonly nameNode: string;
      readonly nameService: string;
      readonly key: string;
    }
  // stage into a job: --partition values and the names of the files staged.
  /** A --partition value other than the job's static one for that column (`staticValue`). */
  | {
      readonly reason: 'partition-differs-static';
      readonly column: string;
      readonly value: string;
      readonly staticValue: string;
    }
  /** A --partition of a column beyond the job's partition columns. */
  | { readonly reason: 'partition-column-extra'; readonly column: string; readonly columns: readonly string[] }
  /** A --partition whose column is not the `expected` next one. */
  | {
      readonly reason: 'partition-column-order';
      readonly column: string;
      readonly expected: string;
      readonly columns: readonly string[];
    }
  /** Files staged without values for these partition columns. */
  | { readonly reason: 'partition-values-missing'; readonly columns: readonly string[] }
  /** A name holding a segment that starts with the temp files' prefix. */
  | { readonly reason: 'file-name-reserved'; readonly name: string; readonly prefix: string }
  /** A writer's marker, or a name under the job's own success file: never committed. */
  | { readonly reason: 'file-name-marker'; readonly name: string; readonly successFile: string }
  /** Two staged files of one name. */
  | { readonly reason: 'file-name-twice'; readonly name: string }
  /** stage given no files, no stdin and no --print-path. */
  | { readonly reason: 'nothing-to-stage' }
  /** stage DIR: a dir that is a partition (`column`) deeper than the job's partition columns. */
  | {
      readonly reason: 'tree-partition-extra';
      readonly dir: string;
      readonly column: string;
      readonly depth: number;
      readonly columns: readonly string[];
    }
  // commit-task: what the attempt holds.
  /** A task file named as the job's own success marker, or under it. */
  | { readonly reason: 'task-file-success-name'; readonly path: string; readonly successFile: string }
  /** An attempt holding a directory named as the job's success marker. */
  | { readonly reason: 'attempt-success-dir'; readonly taskAttempt: string; readonly successFile: string }
  /** The writer wrote a file at the attempt dir's path (`dir`), not under it. */
  | { readonly reason: 'attempt-dir-is-file'; readonly taskAttempt: string; readonly dir: string }
  /** A symbolic link (`symlink`), or a pipe, socket, device or S3 dir key with bytes. */
  | {
      readonly reason: 'attempt-not-regular-file';
      readonly taskAttempt: string;
      readonly name: string;
      readonly symlink: boolean;
    }
  /** An attempt holding a name that is not valid UTF-8. */
  | { readonly reason: 'attempt-name-not-utf8'; readonly taskAttempt: string; readonly name: string }
  /** Never staged in this app attempt (`olderOutput`: its files from an earlier one, or null). */
  | {
      readonly reason: 'attempt-not-staged';
      readonly taskAttempt: string;
      readonly appAttempt: number;
      readonly olderOutput: string | null;
    }
  // The CLI's config files (`file`: the one at fault).
  /** A config file that cannot be read (`given`: named by --config or STAGECOMMIT_CONFIG). */
  | { readonly reason: 'config-unreadable'; readonly file: string; readonly error: string; readonly given: boolean }
  /** A config file that is not valid YAML. */
  | { readonly reason: 'config-not-yaml'; readonly file: string; readonly error: string }
  /** A config file that is not a mapping. */
  | { readonly reason: 'config-not-mapping'; readonly file: string }
  /** A key of no such name (`section`: the mapping it is in; `near`: the closest known key, or null). */
  | {
      readonly reason: 'config-key-unknown';
      readonly file: string;
      readonly key: string;
      readonly section: string | null;
      readonly near: string | null;
      readonly known: readonly string[];
    }
  /** A value of the wrong form (`must`: what it must be, "a positive whole number"). */
  | { readonly reason: 'config-value-invalid'; readonly file: string; readonly key: string; readonly must: string }
  /** `stagecommit stage` given arguments that do not go together, or too few (`problem`: which). */
  | {
      readonly reason: 'stage-arguments';
      readonly problem:
        | 'new-job-extras'
        | 'name-without-stdin'
        | 'stdin-twice'
        | 'print-path-with-files'
        | 'stdin-without-name'
        | 'no-target-or-task';
    }
  // Other commands' options and roots.
  /** A duration (--older-than) that is not a number and a unit. */
  | { readonly reason: 'duration-invalid'; readonly duration: string }
  /** `op` (jobs, clean-orphans) given nothing to look at. */
  | { readonly reason: 'no-roots'; readonly op: 'jobs' | 'clean-orphans' }
  /** `op` given URIs on different stores. */
  | { readonly reason: 'roots-on-stores'; readonly op: 'jobs' | 'clean-orphans' }
  /** clean-orphans --delete-unpublished without --delete. */
  | { readonly reason: 'delete-unpublished-alone' }
  /** clean-orphans' roots that are no directories, each with its problem. */
  | {
      readonly reason: 'roots-invalid';
      readonly roots: readonly {
        readonly root: string;
        readonly problem: 'missing' | 'symlink' | 'file' | 'not-dir';
      }[];
    }
  /** A root given to jobs that does not exist or is not a directory. */
  | { readonly reason: 'jobs-root-invalid'; readonly root: string; readonly problem: 'missing' | 'not-dir' }
  /** hdfs://HOST:PORT naming the name node's RPC port (`why`: how it was told), not its HTTP one. */
  | {
      readonly reason: 'name-node-rpc-port';
      readonly hostPort: string;
      readonly why: string;
      readonly host: string;
      readonly httpPort: number;
    }
  /** A rerun of stage --job-id whose parameters differ from the job's (`diff`: which, as shown). */
  | {
      readonly reason: 'rerun-other-parameters';
      readonly jobId: string;
      readonly stagingDir: string;
      readonly diff: string;
    }
  /** A task outside --tasks (`what`: what was not done, "committed"). */
  | { readonly reason: 'task-not-declared'; readonly task: string; readonly tasks: number; readonly what: string }
  /** No --job and no STAGECOMMIT_JOB. */
  | { readonly reason: 'no-job-given' }
  /** adopt's --target on another store than the leftover. */
  | { readonly reason: 'adopt-target-other-store'; readonly target: string; readonly store: string }
  /** --attempt without --task. */
  | { readonly reason: 'attempt-without-task' }
  // A handle that names no job (JobGoneError): finished, or never existed.
  /** Committed (`success`: its _SUCCESS URI); `strayPlan`: a commit plan of it that landed later, or null. */
  | {
      readonly reason: 'job-finished';
      readonly jobId: string;
      readonly success: string;
      readonly committedAt: string;
      readonly strayPlan: string | null;
    }
  /** abort of a committed job. */
  | {
      readonly reason: 'job-finished-abort';
      readonly jobId: string;
      readonly success: string;
      readonly committedAt: string;
    }
  /** commit-task of a committed job. */
  | {
      readonly reason: 'job-finished-task';
      readonly jobId: string;
      readonly success: string;
      readonly committedAt: string;
      readonly task: string;
    }
  /** A commit plan no table-log entry names, left where its job ended before it landed: garbage. */
  | { readonly reason: 'job-plan-given-up'; readonly stagingDir: string; readonly plan: string }
  /** No job at the handle: it finished (committed or aborted) or never existed. */
  | { readonly reason: 'no-job'; readonly stagingDir: string };

type Of<R extends UsageDetail['reason']> = Extract<UsageDetail, { reason: R }>;

/** The reasons of a handle that names no job (JobGoneError). */
export type JobGoneDetail = Of<
  'job-finished' | 'job-finished-abort' | 'job-finished-task' | 'job-plan-given-up' | 'no-job'
>;

function relativePath(d: Of<'relative-path-invalid'>): string {
  const why =
    d.problem === 'absolute'
      ? 'absolute paths are not allowed; give a path relative to the table'
      : d.problem === 'segment'
        ? "empty, '.' and '..' segments are not allowed"
        : 'NUL characters are not allowed';
  return `invalid ${d.what} '${d.path}': ${why}`;
}

function noTicket(d: Of<'kerberos-no-ticket'>): string {
  return d.keytab !== null
    ? `no Kerberos ticket for HTTP/${d.host} from keytab ${d.keytab} as ${d.principal} (${d.error}): check the keytab and webhdfs.kerberos.principal (klist -kt ${d.keytab})`
    : `no valid Kerberos ticket for HTTP/${d.host} (${d.error}): run 'kinit ${d.principal}', or name a keytab in the config (webhdfs.kerberos.keytab and principal)`;
}

function authRefused(d: Of<'auth-refused'>): string {
  switch (d.gave) {
    case 'delegation-token':
      return `the name node ${d.nameNode} refused the delegation token (HTTP 401): it may have expired or been cancelled; fetch a new one (hdfs fetchdt) or use Kerberos`;
    case 'basic-auth':
      return `the gateway ${d.nameNode} refused the user and password of webhdfs.basicAuth (HTTP 401): check the user and the password file`;
    case 'kerberos':
      return `the name node ${d.nameNode} refused the Kerberos ticket (HTTP 401): check the principal with klist, and that the name node's realm trusts it`;
    case 'none':
      return d.negotiate
        ? `the name node ${d.nameNode} requires Kerberos (HTTP 401, Negotiate): run kinit and set 'webhdfs.kerberos: true' in the config (or hadoop.security.authentication=kerberos in HADOOP_CONF_DIR), or give a delegation token (HADOOP_TOKEN_FILE_LOCATION)`
        : `the name node ${d.nameNode} requires authentication (HTTP 401): give a delegation token (HADOOP_TOKEN_FILE_LOCATION) or configure Kerberos (webhdfs.kerberos)`;
  }
}

function uriMissingSlashes(d: Of<'uri-missing-slashes'>): string {
  const form = d.scheme.startsWith('s3')
    ? 'BUCKET/path'
    : 'HOST:PORT/path (or hdfs:///path for the default file system)';
  return `'${d.uri}' looks like a ${d.scheme} URI missing its '//': write ${d.scheme}://${form}`;
}

const STAGE_ARGUMENTS: { readonly [P in Of<'stage-arguments'>['problem']]: string } = {
  'new-job-extras':
    'stage --target starts a new job and takes no --job, --task or files: stage files in a second call with --job',
  'name-without-stdin': '--name names the data read from stdin: give FILE - as well',
  'stdin-twice': 'stdin (-) can be read once per call',
  'print-path-with-files': '--print-path takes no files: either print the dir or stage files',
  'stdin-without-name': 'reading stdin (FILE -) needs --name NAME for the file it becomes',
  'no-target-or-task': 'stage needs --target URI (new job) or --job JOB --task T (task files)',
};

function badRoot(r: Of<'roots-invalid'>['roots'][number]): string {
  switch (r.problem) {
    case 'missing':
      return `the root ${r.root} does not exist`;
    case 'symlink':
      return `the root ${r.root} is a symbolic link, which clean-orphans never follows (give the directory it points to)`;
    case 'file':
      return `the root ${r.root} is a file`;
    case 'not-dir':
      return `the root ${r.root} is not a directory`;
  }
}

/** One message per reason: a reason without one fails to compile. */
const MESSAGES: { readonly [R in UsageDetail['reason']]: (d: Of<R>) => string } = {
  'command-line': (d) => d.problem,
  'tasks-not-declared': (d) =>
    `job ${d.jobId} was staged without --tasks: --tasks-to-run could list only tasks already attempted, never the ones not started; stage the job with --tasks N (tasks 0…N-1) to loop over the tasks still to run, or read each task's state in 'stagecommit status --json'`,
  'options-not-object': (d) => `${d.op}: takes an options object, got ${d.got}`,
  'option-unknown': (d) =>
    `${d.op}: '${d.option}' is not an option (${d.near !== null ? `did you mean '${d.near}'?` : `the options are ${d.known.join(', ')}`})`,
  'option-missing': (d) => `${d.op}: '${d.option}' is required: ${d.what}`,
  'option-invalid': (d) => `${d.op}: '${d.option}' must be ${d.what}, got ${d.got}`,
  'number-invalid': (d) =>
    d.positive
      ? `${d.option} must be a positive whole number, got '${d.value}'`
      : `${d.option} must be a whole number (0, 1, …), got '${d.value}'`,
  'uri-line-break': (d) =>
    `'${d.uri}' holds a line break (CR, LF, U+2028 or U+2029): stagecommit cannot record such a location; choose another name`,
  'uri-empty': () => 'an empty path or URI was given: give a directory path or a URI such as s3://bucket/table',
  'file-uri-invalid': (d) => `invalid file URI '${d.uri}': ${d.error}; use file:///absolute/path`,
  'uri-scheme-unsupported': (d) =>
    `unsupported URI scheme '${d.scheme}://' in '${d.uri}': use a local path, file://, s3:// (s3a://, s3n://), hdfs://, webhdfs:// or swebhdfs://`,
  'uri-no-bucket': (d) => `'${d.uri}' names no bucket: use ${d.scheme}://BUCKET/path`,
  'uri-missing-slashes': uriMissingSlashes,
  'uri-bad-percent': (d) =>
    `'${d.uri}' has a '%' that is not a percent-escape (%XX of UTF-8): write a literal % as %25`,
  'partition-column-invalid': (d) =>
    `invalid partition column '${d.column}': use letters, digits and '_' (not first), e.g. --partition-by dt,region`,
  'partition-invalid': (d) =>
    `invalid --partition '${d.partition}': expected COLUMN=VALUE, e.g. --partition dt=2026-11-30`,
  'task-id-invalid': (d) =>
    d.leadingZeros
      ? `invalid task id '${d.task}': write numbers without leading zeros ('${String(Number(d.task))}')`
      : `invalid task id '${d.task}': use a number or letters, digits, '_' and '-' (not first)`,
  'attempt-invalid': (d) => `invalid --attempt '${d.attempt}': expected a number (0, 1, …)`,
  'relative-path-invalid': relativePath,
  'file-outside-partitions': (d) =>
    `file '${d.path}' is not inside a partition: expected ${d.columns.map((c) => `${c}=…`).join('/')}/FILE`,
  'file-partition-segment': (d) =>
    `file '${d.path}': segment '${d.segment}' should be ${d.column}=VALUE (partition columns: ${d.columns.join(', ')})`,
  'file-outside-static-partition': (d) =>
    `file '${d.path}' is outside the job's static partition '${d.staticPartition}'`,
  'config-invalid': (d) => `config: '${d.setting}' must ${d.must}`,
  'config-file-unreadable': (d) => `config: '${d.setting}' ${d.file} cannot be read: ${d.error}`,
  'basic-auth-with-kerberos': () => "config: 'webhdfs.basicAuth' and Kerberos cannot both be used: choose one",
  'keytab-without-principal': () =>
    "config: 'webhdfs.kerberos.keytab' needs 'webhdfs.kerberos.principal' (user@REALM) beside it",
  'basic-auth-in-clear': (d) =>
    `config: 'webhdfs.basicAuth' would send the password in clear to ${d.url}: use swebhdfs:// or https:// name node URLs`,
  's3-endpoint-invalid': (d) =>
    d.problem === 'not-url'
      ? `the S3 endpoint '${d.endpoint}' (${d.from}) is not a URL: write it as http(s)://HOST[:PORT]`
      : `the S3 endpoint '${d.endpoint}' (${d.from}) is not http:// or https://: fix it there`,
  'aws-profile-missing': (d) =>
    `AWS profile '${d.profile}' (AWS_PROFILE) is in neither ${d.configFile} nor ${d.credentialsFile}: add [profile ${d.profile}] to the config file, or fix or unset AWS_PROFILE`,
  'aws-services-missing': (d) =>
    `AWS profile '${d.profile}' names the services section '${d.section}', which ${d.configFile} does not have: add [services ${d.section}] or remove 'services' from the profile`,
  'no-default-name-node': (d) =>
    `${d.scheme}:/// names no name node: set HADOOP_CONF_DIR to the cluster's client config (core-site.xml with fs.defaultFS), or write ${d.scheme}://HOST:${d.port}/path`,
  'token-file-unreadable': (d) => `cannot read the token file ${d.file} (HADOOP_TOKEN_FILE_LOCATION): ${d.error}`,
  'token-file-invalid': (d) =>
    `${d.file} (HADOOP_TOKEN_FILE_LOCATION) is not a Hadoop token storage file: ${d.error}; write it with 'hdfs fetchdt' or unset the variable`,
  'kerberos-package-missing': (d) =>
    `this cluster needs Kerberos (SPNEGO), which needs the optional package 'kerberos' (${d.error}): install it beside stagecommit with 'npm install kerberos' (it builds against libkrb5-dev), or use a delegation token (HADOOP_TOKEN_FILE_LOCATION)`,
  'kerberos-no-service-principal': (d) =>
    `the KDC knows no service principal HTTP/${d.host} for the name node ${d.nameNode} (${d.error}): name the name node by the host its principal names (its HTTP address in hdfs-site.xml)`,
  'kerberos-no-ticket': noTicket,
  'kerberos-failed': (d) => `Kerberos (SPNEGO) for HTTP/${d.host} failed: ${d.error}`,
  'auth-refused': authRefused,
  'not-a-leftover': (d) =>
    `${d.leftover} is not an engine's leftover: adopt takes a Hadoop '_temporary', a Spark '.spark-staging-<id>' or a Hive '.hive-staging…' directory`,
  'leftover-empty': (d) =>
    `${d.leftover} ${d.stage === null ? 'is empty' : `holds no output to publish (${d.stage})`}: there is nothing to adopt; remove it with ${cleanOrphansDeleteCommand()}`,
  'leftover-unpartitioned': (d) =>
    `${d.leftover} holds output outside any partition dir ('${d.file}'), which a dynamic partition overwrite never writes: it cannot be adopted (it would replace the whole table); nothing was changed`,
  'leftover-layout': (d) =>
    `${d.leftover} does not look like what ${d.engine} writes: ${d.problem}; nothing was changed`,
  'leftover-custom-locations': (d) =>
    `${d.leftover} holds ${d.count} file(s) at its top (${d.files.map((f) => `'${f}'`).join(', ')}${d.count > d.files.length ? ', …' : ''}): Spark's output for partitions at custom locations (absolute paths), which cannot be adopted: its destinations are recorded only in the dead driver's memory; nothing was changed; run the query again`,
  'leftover-hive-unfinished': (d) =>
    `${d.leftover} holds no finished Hive output ('${d.output}'): it holds ${d.tops.map((t) => `'${t}'`).join(', ')}${d.writing ? ', which the query was still writing' : ''}; it cannot be adopted: run the query again, and remove this dir with ${cleanOrphansDeleteCommand()}`,
  'leftover-not-partition': (d) =>
    `${d.leftover}: '${d.file}' is in a directory '${d.dir}' that is not a partition (column=value, column in lower case): it cannot be adopted as table output`,
  'leftover-mixed-partitions': (d) =>
    `${d.leftover}: '${d.first}' and '${d.file}' are under different partition columns (${d.columns.join(',') || 'none'} and ${d.others.join(',') || 'none'}): it cannot be adopted as one table's output`,
  'target-is-root': () => 'the target cannot be the root of the store: give a table directory',
  'target-is-bucket': (d) =>
    `the target ${d.target} is a whole bucket: give a table prefix under it, e.g. ${d.target}/warehouse/sales`,
  'target-not-dir': (d) => `the target ${d.target} exists and is not a directory: give a table directory`,
  'target-exists': (d) =>
    `the target ${d.target} already exists and --mode create never replaces anything: use --mode append or --mode overwrite, or choose a new target`,
  'partition-given-twice': (d) => `--partition ${d.column} is given twice: give each column once`,
  'partition-by-repeats': (d) => `--partition-by ${d.columns.join(',')} names a column twice`,
  'partition-not-leading': (d) =>
    `--partition ${d.column} does not match --partition-by ${d.columns.join(',')}: static values must be the leading columns, in order`,
  'target-inside-table': (d) =>
    `the target ${d.target} is inside the table ${d.table}, which has a table log: a job of ${d.partition} must commit through that table's log to meet its other jobs; stage --target ${d.table} with --partition for ${d.partition}`,
  'target-in-staging-dir': (d) =>
    `the target ${d.target} is inside the staging dir ${d.stagingDir}: choose another --staging-dir`,
  'staging-dir-in-target': (d) =>
    d.why === 'create'
      ? `the staging dir ${d.stagingDir} is inside the target, and making it would make the target exist, which --mode create refuses at commit: choose a --staging-dir outside the target`
      : `the staging dir ${d.stagingDir} is inside the target, where readers would see it: choose a --staging-dir outside it (or under a name starting with '_' or '.')`,
  'v2-with-overwrite': () =>
    '--algorithm v2 cannot be used with --mode overwrite: v2 publishes each task as it commits, so a failed job would leave the old data deleted and the new data half written; use v1 (the default)',
  'tasks-invalid': (d) => `--tasks must be a positive whole number, got ${d.got}`,
  'job-id-invalid': (d) =>
    `invalid --job-id '${d.jobId}': use letters, digits, '.', '_' and '-' (up to 128, not first)`,
  'staging-dir-not-empty': (d) =>
    `the staging dir ${d.stagingDir} is not empty (it holds ${d.names}): a job never adopts files it did not stage; choose an empty or new --staging-dir${d.stagedJobId !== null ? `; to go on with job ${d.stagedJobId} staged there, give --job-id ${d.stagedJobId}` : ''}`,
  'job-id-in-use': (d) =>
    `job id '${d.jobId}' is already in use (${d.stagingDir}): choose another --job-id, or leave it out for a fresh UUID`,
  'job-id-committed': (d) =>
    `job id '${d.jobId}' names a job that already committed into ${d.target} (${d.committedAt}): choose another --job-id`,
  'handle-unsafe-path': (d) =>
    d.holds === 'percent'
      ? `${d.what} ${d.given} names a path holding '%' (written %25 in a URI): its job handle would not read back, as URIs are percent-decoded; choose a name without '%'`
      : `${d.what} ${d.given} names a path holding a control character: its job handle would not read back; choose another name`,
  'staging-dir-other-store': (d) =>
    `${d.what} ${d.given} is not on the target's store (${d.store}): the staging dir must be on the same store, bucket or namespace`,
  'source-missing': (d) =>
    `cannot read ${d.file}: ${d.notUtf8 ? 'no such file (is its name valid UTF-8? a name that is not cannot be given on the command line; rename it)' : 'no such file'}; nothing was staged`,
  'source-not-file': (d) =>
    `${d.file} is not a regular file: stage files or one directory, or use --print-path and write into the dir`,
  'source-pseudo-fs': (d) =>
    d.dir
      ? `${d.path} is on ${d.filesystem}, a kernel filesystem whose files do not hold the size they report: copy it to a regular directory first; nothing was staged`
      : `${d.path} is on ${d.filesystem}, a kernel filesystem whose files do not hold the size they report (a copy comes out empty, or never ends): copy it to a regular file first (cat ${d.path} > FILE); nothing was staged`,
  'source-symlink': (d) =>
    `${d.file} is a symbolic link: stage DIR copies no links (one may point outside the tree, or loop); copy the tree with its links resolved (cp -rL) and stage that; nothing was staged`,
  'source-special': (d) =>
    `${d.file} is not a regular file or directory (a FIFO, socket or device): take it out of the tree; nothing was staged`,
  'source-dir-empty': (d) => `${d.dir} holds no files to stage; nothing was staged`,
  'source-dir-with-others': (d) =>
    `${d.dir} is a directory: stage DIR takes one directory and nothing else; stage the other files in a call of their own`,
  'leftover-missing': (d) =>
    `${d.leftover} does not exist: give the path of the leftover (a '_temporary', '.spark-staging-…' or '.hive-staging…' dir)`,
  'leftover-symlink': (d) =>
    `${d.leftover} is a symbolic link: give the leftover dir itself (adopt never follows links, it moves what it adopts)`,
  'leftover-not-dir': (d) => `${d.leftover} is not a directory: give the path of the leftover dir`,
  'leftover-special-file': (d) =>
    `${d.file} is neither a file nor a directory: an engine never leaves one; nothing was changed`,
  'adopt-target-missing': (d) =>
    `the target ${d.target} is not an existing directory: adopt publishes into an existing table; give it with --target`,
  'adopt-target-in-leftover': (d) =>
    `the target ${d.target} is ${d.itself ? 'the leftover itself' : 'inside the leftover'}: give the table the leftover belongs to with --target; nothing was changed`,
  'leftover-outside-target': (d) =>
    `on a store without rename (S3) adopt publishes the leftover from where it is, so it must be inside the target: ${d.leftover} is not inside ${d.target} under a '_' or '.' name`,
  'leftover-other-filesystem': (d) =>
    `the staging dir ${d.stagingDir} of the target ${d.target} is on another filesystem than ${d.leftover}, and adopting moves the leftover with one rename: give a --target (or a stagingRoot in the config) on the leftover's filesystem; nothing was changed`,
  'leftover-file-invalid': (d) => `${d.leftover}: ${d.problem}; nothing was changed`,
  'leftover-tasks-uncountable': (d) =>
    `${d.leftover} was left in its engine's job commit, which begins only once every task has committed, and holds merged output that --tasks cannot count: leave --tasks out`,
  'leftover-task-beyond': (d) =>
    `${d.leftover} holds committed output of task ${d.task}, outside --tasks ${d.tasks} (tasks 0…${d.tasks - 1}): give the job's real task count`,
  'hadoop-conf-unbound': (d) =>
    `${d.file} (HADOOP_CONF_DIR): ${d.name} is '${d.value}', and nothing defines '\${${d.variable}}' (no property, no environment variable for \${env.NAME}, not user.name or user.home): define it there or write the value out`,
  'hadoop-conf-substitution-loop': (d) =>
    `${d.file} (HADOOP_CONF_DIR): ${d.name} needs more than ${d.limit} \${…} substitutions ('${d.value}'): a loop of properties naming each other? Write the value out`,
  'hadoop-conf-not-xml': (d) => `${d.file} (HADOOP_CONF_DIR) is not valid XML: ${d.error}`,
  'hadoop-conf-unreadable': (d) => `cannot read ${d.file} (HADOOP_CONF_DIR): ${d.error}`,
  'hadoop-conf-empty': (d) =>
    `HADOOP_CONF_DIR=${d.dir} holds neither core-site.xml nor hdfs-site.xml: point it at the cluster's client config, or unset it`,
  'hadoop-include-no-href': (d) => `${d.file} (HADOOP_CONF_DIR) has an xi:include without href: give it one`,
  'hadoop-include-too-deep': (d) =>
    `${d.file} (HADOOP_CONF_DIR): xi:include of ${d.href} is ${d.depth} includes deep: a loop of files?`,
  'hadoop-include-too-many': (d) =>
    `${d.file} (HADOOP_CONF_DIR): more than ${d.limit} xi:includes read (at ${d.href}): files including each other over and over? Include each file once`,
  'hadoop-include-url': (d) =>
    `${d.file} (HADOOP_CONF_DIR): xi:include of ${d.href}: only files are read, not URLs; copy it into a file`,
  'hadoop-include-unreadable': (d) =>
    `${d.file} (HADOOP_CONF_DIR): xi:include of ${d.href} cannot be read (${d.error}) and has no xi:fallback: fix the href or add <xi:fallback/>`,
  'hadoop-name-node-address': (d) =>
    `hdfs-site.xml (HADOOP_CONF_DIR) lists name node '${d.nameNode}' of '${d.nameService}' but neither ${d.key}.${d.nameService}.${d.nameNode} nor dfs.namenode.rpc-address.${d.nameService}.${d.nameNode}`,
  'partition-differs-static': (d) =>
    `--partition ${d.column}=${d.value} differs from the job's static partition ${d.column}=${d.staticValue}`,
  'partition-column-extra': (d) =>
    `--partition ${d.column}: the job has no more partition columns (${d.columns.join(', ') || 'none'})`,
  'partition-column-order': (d) =>
    `--partition ${d.column}: expected column '${d.expected}' next (partition columns: ${d.columns.join(', ')})`,
  'partition-values-missing': (d) =>
    `files need a value for partition column(s) ${d.columns.join(', ')}: add --partition ${d.columns[0]}=VALUE`,
  'file-name-reserved': (d) =>
    `file name '${d.name}': names starting with '${d.prefix}' are reserved for temp files and never committed; rename it`,
  'file-name-marker': (d) =>
    `file name '${d.name}': a writer's marker (_SUCCESS, _started_*, _committed_*, their .crc), or under the job's own '${d.successFile}': it would never be committed; rename it`,
  'file-name-twice': (d) => `two staged files have the same name '${d.name}': give each file once`,
  'nothing-to-stage': () => 'nothing to stage: give FILE… (or - with --name for stdin), or --print-path',
  'tree-partition-extra': (d) =>
    `dir '${d.dir}' is a partition of column '${d.column}' at depth ${d.depth}, but the job's partition columns are ${d.columns.join(', ') || 'none'}: lay the tree out as ${[...d.columns.map((c) => `${c}=…`), 'FILE'].join('/')} (after the --partition values given); nothing was staged`,
  'task-file-success-name': (d) =>
    `task file '${d.path}' would collide with the job's own marker '${d.successFile}': rename it`,
  'attempt-success-dir': (d) =>
    `${d.taskAttempt} holds a directory '${d.successFile}', which would collide with the job's own marker '${d.successFile}': remove it and run commit-task again (nothing was committed)`,
  'attempt-dir-is-file': (d) =>
    `${d.taskAttempt}'s dir ${d.dir} is a file: the writer wrote its output at the path --print-path gave, not under it; move it under that path (e.g. ${d.dir}/part-00000) and run commit-task again (nothing was committed)`,
  'attempt-not-regular-file': (d) =>
    `${d.taskAttempt} holds '${d.name}', which is not a regular file (${d.symlink ? 'a symbolic link' : "a pipe, socket or device; on S3, a key ending in '/' that holds bytes"}): a task's output is files only; remove it and run commit-task again (nothing was committed)`,
  'attempt-name-not-utf8': (d) =>
    `${d.taskAttempt} holds a name that is not valid UTF-8 (read as '${d.name}'): rename it in UTF-8 and run commit-task again (nothing was committed)`,
  'attempt-not-staged': (d) =>
    `${d.taskAttempt} was never staged in app attempt ${d.appAttempt}${d.appAttempt > 0 ? ' (recover started it)' : ''}: nothing was committed${d.olderOutput !== null ? `; its files are in ${d.olderOutput}, left from an earlier app attempt: stage them again` : '; stage its files, or --print-path for a writer, first'}`,
  'config-unreadable': (d) =>
    `cannot read config ${d.file}: ${d.error}; ${d.given ? 'fix the path or leave out --config (and STAGECOMMIT_CONFIG)' : 'fix its permissions or remove it'}`,
  'config-not-yaml': (d) => `config ${d.file} is not valid YAML: ${d.error}`,
  'config-not-mapping': (d) => `config ${d.file} is not a YAML mapping: see the README for its keys`,
  'config-key-unknown': (d) =>
    `config ${d.file}: unknown key '${d.key}': ${d.near !== null ? `did you mean '${d.near}'?` : `the known keys${d.section !== null ? ` of '${d.section}'` : ''} are ${d.known.join(', ')}`}`,
  'config-value-invalid': (d) => `config ${d.file}: '${d.key}' must be ${d.must}`,
  'stage-arguments': (d) => STAGE_ARGUMENTS[d.problem],
  'duration-invalid': (d) =>
    `invalid --older-than '${d.duration}': give a number and a unit s, m, h or d (e.g. 90m, 36h, 7d)`,
  'no-roots': (d) =>
    d.op === 'jobs'
      ? 'jobs needs a table or a staging root to list'
      : 'clean-orphans needs at least one root directory to scan',
  'roots-on-stores': (d) =>
    d.op === 'jobs'
      ? 'the URIs are on different stores: run jobs once per store'
      : 'the roots are on different stores: run clean-orphans once per store',
  'delete-unpublished-alone': () =>
    '--delete-unpublished removes leftovers only together with --delete: add --delete, or leave it out for a dry run',
  'roots-invalid': (d) =>
    `${d.roots.map(badRoot).join('; ')}: give the directories to scan (a table, or a warehouse above it); nothing was scanned or changed`,
  'jobs-root-invalid': (d) =>
    `${d.root} ${d.problem === 'missing' ? 'does not exist' : 'is not a directory'}: give a table or a staging root`,
  'name-node-rpc-port': (d) =>
    `${d.hostPort} ${d.why}: stagecommit speaks WebHDFS over HTTP, not the name node's RPC port; use its HTTP address, dfs.namenode.http-address in hdfs-site.xml (port ${d.httpPort} by default: hdfs://${d.host}:${d.httpPort}/…), or set HADOOP_CONF_DIR and write hdfs:///…`,
  'rerun-other-parameters': (d) =>
    `job id '${d.jobId}' names a job staged at ${d.stagingDir} with other parameters: ${d.diff}; run it with the job's own parameters to go on with it, or choose another --job-id`,
  'task-not-declared': (d) =>
    `task ${d.task} is not one of the job's declared tasks 0…${d.tasks - 1} (--tasks ${d.tasks}): nothing was ${d.what}`,
  'no-job-given': () =>
    "no job given: pass --job HANDLE (what 'stagecommit stage --target …' printed) or set STAGECOMMIT_JOB",
  'adopt-target-other-store': (d) =>
    `--target ${d.target} is not on the leftover's store (${d.store}): adopting moves no data between stores`,
  'attempt-without-task': () => '--attempt needs --task: it names one attempt of one task',
  'job-finished': (d) =>
    `job ${d.jobId} is finished: it was committed (${d.success}, ${d.committedAt}); ${d.strayPlan !== null ? `a commit plan of it that landed later, ${d.strayPlan}, is garbage (commit-job and recover remove it)` : 'there is nothing more to do'}`,
  'job-finished-abort': (d) =>
    `cannot abort: job ${d.jobId} is finished: it was committed (${d.success}, ${d.committedAt}); nothing was changed`,
  'job-finished-task': (d) =>
    `job ${d.jobId} is finished: it was committed (${d.success}, ${d.committedAt}); task ${d.task} can no longer be committed into it: its commit holds task ${d.task}'s output only if the task was committed before the job was (if that output is missing, run the job again)`,
  'job-plan-given-up': (d) =>
    `no job at ${d.stagingDir}: it ended before this commit plan of it landed, and no table-log entry names the plan, so it was never applied: ${d.plan} is garbage (commit-job, recover and abort remove it)`,
  'no-job': (d) =>
    `no job at ${d.stagingDir}: it is finished (committed or aborted) or never existed; check the handle that 'stagecommit stage' printed`,
  'job-id-taken': (d) =>
    `job id '${d.jobId}' is already in use (${d.stagingDir})${d.rerun ? '' : ': choose another --job-id'}`,
};

export function usageMessage(d: UsageDetail): string {
  return (MESSAGES[d.reason] as (d: UsageDetail) => string)(d);
}
