// When a process of this host started, to tell a pid's holder from a later process that was
// given the same pid (Linux hands pids out again: 32,768 of them by default).

import { readFileSync } from 'node:fs';

/** Linux's USER_HZ: /proc counts a process's start in these ticks since boot (100 on every Linux ABI). */
const TICKS_PER_SECOND = 100;

let bootMs: number | null | undefined;

/** The host's boot time (`btime` of /proc/stat), read once; null where there is no /proc. */
function bootTimeMs(): number | null {
  if (bootMs !== undefined) return bootMs;
  try {
    const m = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'latin1'));
    bootMs = m ? Number(m[1]) * 1000 : null;
  } catch {
    bootMs = null;
  }
  return bootMs;
}

/**
 * When process `pid` started (ms since the epoch, to within a second), or null when it cannot be
 * told: no /proc (not Linux), or no such process. Field 22 of /proc/<pid>/stat, counted after the
 * command name, which is in parentheses and may itself hold spaces and parentheses.
 */
export function processStartMs(pid: number): number | null {
  const boot = bootTimeMs();
  if (boot === null) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[19]);
    return Number.isFinite(ticks) ? boot + (ticks * 1000) / TICKS_PER_SECOND : null;
  } catch {
    return null;
  }
}
