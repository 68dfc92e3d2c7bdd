// Loads the CLI bundle (dist/bundle/cli.cjs) with the code V8 compiled for it on an earlier run.
// Node 20 compiles every module of a process afresh (it has no compile cache, and none for ES
// modules at all): for a one-file S3 commit that was a fifth of the process. So the bundle is one
// CommonJS file compiled by vm.Script, and after a run that found no usable cache, the code V8
// compiled (the modules and functions that run used) is kept in
// $XDG_CACHE_HOME/stagecommit (~/.cache/stagecommit), one file per command and kind of store it
// names, since an S3 commit-job compiles other code than a local stage.
// - A cache is used only for the same bundle bytes, Node version, architecture and flags, only
//   when its own checksum holds (V8 checks the source only by its length, and a damaged cache
//   must never reach it), and only when it and its dir are this user's and no one else may write
//   them (a cache is code we run).
// - It is written to a temporary file and renamed into place: runs racing each other each leave a
//   whole file, the last one wins.
// - Nothing about the cache ever fails a command: a cache dir that cannot be written is a slower
//   start, no more. STAGECOMMIT_CODE_CACHE=off (or 0, false, no) turns it off.
import { isAscii } from 'node:buffer';
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';

const MAGIC = 'stagecommit-code-cache 1';
/** Far above any cache of this bundle (about 1 MB). */
const MAX_BYTES = 64 * 1024 * 1024;

const COMMANDS = new Set([
  'stage',
  'commit-task',
  'commit-job',
  'abort',
  'recover',
  'status',
  'jobs',
  'clean-orphans',
  'adopt',
  'completion',
]);

/**
 * What a command line runs, as far as the code it compiles goes: the command and the kind of
 * store it names. Each gets a cache of its own: a cache holds what the run that made it compiled,
 * and a user's first run on S3 is a `stage`, not the `commit-job` that later runs most often.
 */
function codePath(argv) {
  const uri = argv.find((a) => /(?:^|=)(?:s3a?|s?webhdfs|hdfs):\/\//i.test(a));
  const store = uri === undefined ? 'local' : /(?:^|=)s3a?:/i.test(uri) ? 's3' : 'hdfs';
  return `${argv.find((a) => COMMANDS.has(a)) ?? 'other'}-${store}`;
}

/** Where caches go: an absolute $XDG_CACHE_HOME, else an absolute home's .cache; null when neither is. */
function cacheDir(env) {
  const home = os.homedir();
  const base =
    env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME)
      ? env.XDG_CACHE_HOME
      : path.isAbsolute(home)
        ? path.join(home, '.cache')
        : null;
  return base && path.join(base, 'stagecommit');
}

/**
 * The cache file for this bundle (by its bytes: a redeploy can bring other bytes of the same size
 * with the same time and inode, and V8 checks only the length), Node, flags and command; null when
 * caching is off or impossible.
 */
function cacheFileFor(bytes, argv, env) {
  const dir = cacheDir(env);
  if (/^(?:off|0|false|no)$/i.test(env.STAGECOMMIT_CODE_CACHE ?? '') || !dir) return null;
  const key = createHash('sha256')
    .update(bytes)
    .update([process.version, process.arch, process.execArgv.join(' '), env.NODE_OPTIONS ?? ''].join('\0'))
    .digest('hex')
    .slice(0, 24);
  return path.join(dir, `cli-${codePath(argv)}-${key}.cache`);
}

/**
 * Only this user may have written what we run: the file and its dir are the user's and writable
 * by no one else (as ssh's StrictModes asks of ~/.ssh). A cache another user could write is code
 * they could make us run.
 */
function ownedByUs(s) {
  const uid = process.getuid?.();
  return uid === undefined || (s.uid === uid && (s.mode & 0o022) === 0);
}

/** A cache file's first line: what it is, and the checksum of the code after it. */
function header(data) {
  return `${MAGIC} ${createHash('sha256').update(data).digest('hex')}`;
}

/**
 * The cached code in `file` if it is whole (a header line with its checksum, then the code), and when it was last used.
 */
function readCache(file) {
  if (!file) return undefined;
  let fd;
  try {
    // Only a regular file of a sane size: a FIFO there would block a plain read forever.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
    const s = fstatSync(fd);
    if (!s.isFile() || s.size > MAX_BYTES || !ownedByUs(s) || !ownedByUs(statSync(path.dirname(file))))
      return undefined;
    const buf = readFileSync(fd);
    const nl = buf.indexOf(10);
    if (nl < 0 || !buf.subarray(0, nl).toString('latin1').startsWith(`${MAGIC} `)) return undefined;
    const data = buf.subarray(nl + 1);
    return buf.subarray(0, nl).toString('latin1') === header(data) ? { data, usedAtMs: s.mtimeMs } : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The cache dir, and the cache base above it ($XDG_CACHE_HOME, ~/.cache) when that is missing:
 * each made only inside a dir of this user's, nothing higher. root running with another user's
 * HOME (sudo -E) must not leave them a ~/.cache they cannot write, nor make a HOME that is not
 * there. One plain mkdir each: Node's recursive mkdir never returns where mkdir says "no such
 * file" of a parent that exists (under /proc/self, say).
 */
function makeDir(dir) {
  const uid = process.getuid?.();
  for (const d of [path.dirname(dir), dir]) {
    if (existsSync(d)) continue;
    if (uid !== undefined && statSync(path.dirname(d)).uid !== uid)
      throw new Error(`${path.dirname(d)} is another user's`);
    try {
      mkdirSync(d, { mode: 0o700 });
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
  }
}

/** Writes the code `produce` gives, made only once the dir is known to take it (making it costs a few ms). */
function writeCache(file, produce) {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    makeDir(path.dirname(file));
    if (!ownedByUs(statSync(path.dirname(file)))) return;
    const data = produce();
    writeFileSync(tmp, Buffer.concat([Buffer.from(`${header(data)}\n`, 'latin1'), data]), { mode: 0o600 });
    renameSync(tmp, file);
    forgetOldBuilds(file);
  } catch {
    try {
      unlinkSync(tmp);
    } catch {
      // never written
    }
  }
}

const DAY_MS = 24 * 3600 * 1000;
/** Other builds' caches kept at most (about one earlier build's worth: a file per command and store). */
const OTHER_BUILDS_KEPT = 32;

/**
 * Caches of other builds (an earlier version, another Node) go once unused for 30 days, and the
 * oldest beyond the 32 used last; this build's stay; leftover temporary files go. A cache in use
 * has its time renewed (touch), so "unused" is the time since a run last used it.
 */
function forgetOldBuilds(kept) {
  const key = kept.slice(kept.lastIndexOf('-') + 1);
  const dir = path.dirname(kept);
  const now = Date.now();
  const others = [];
  for (const name of readdirSync(dir)) {
    // A temporary file that a killed run left goes after a day (one being written is younger).
    const tmp = /^cli-[a-z0-9-]+-[0-9a-f]{24}\.cache\.\d+\.[0-9a-f]{8}\.tmp$/.test(name);
    if (!tmp && (!/^cli-[a-z0-9-]+-[0-9a-f]{24}\.cache$/.test(name) || name.endsWith(`-${key}`))) continue;
    try {
      const at = statSync(path.join(dir, name)).mtimeMs;
      if (at < now - (tmp ? 1 : 30) * DAY_MS) unlinkSync(path.join(dir, name));
      else if (!tmp) others.push({ name, at });
    } catch {
      // gone already, or not ours to remove
    }
  }
  others.sort((a, b) => b.at - a.at);
  for (const { name } of others.slice(OTHER_BUILDS_KEPT)) {
    try {
      unlinkSync(path.join(dir, name));
    } catch {
      // gone already
    }
  }
}

/**
 * Compiles and runs the bundle; returns its exports and `save`, to call once the step is over
 * (it writes the cache when there was none to use).
 */
export function loadCli(bundle, argv, env) {
  // The build writes ASCII only, which reads several times faster as latin1 than as UTF-8.
  const bytes = readFileSync(bundle);
  const source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
  const file = cacheFileFor(bytes, argv, env);
  const cached = readCache(file);
  const script = new vm.Script(
    `(function (exports, require, module, __filename, __dirname, __scMetaUrl) {${source}\n})`,
    { filename: bundle, cachedData: cached?.data },
  );
  const module = { exports: {} };
  script.runInThisContext()(
    module.exports,
    createRequire(bundle),
    module,
    bundle,
    path.dirname(bundle),
    pathToFileURL(bundle).href,
  );
  const fresh = file !== null && (cached === undefined || script.cachedDataRejected === true);
  const save = () => {
    // A run that changed a V8 flag (a large commit's heap) compiled for those flags: a normal start would reject its
    // cache.
    if (module.exports.v8FlagsChanged?.()) return;
    if (fresh) writeCache(file, () => script.createCachedData());
    else if (cached && cached.usedAtMs < Date.now() - DAY_MS) touch(file);
  };
  return { cli: module.exports, save };
}

/** Renews a cache's time: it is in use (at most once a day, a write the runs between skip). */
function touch(file) {
  try {
    const now = new Date();
    utimesSync(file, now, now);
  } catch {
    // not ours to touch: it goes by its age
  }
}
