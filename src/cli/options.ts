// Parsers for option values shared by the commands: each throws a one-line UsageError (exit 2).

import { UsageError } from '../errors.js';

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function positiveInt(name: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v) || Number(v) < 1) throw new UsageError(`${name} must be a positive whole number, got '${v}'`);
    return Number(v);
  };
}

export function wholeNumber(name: string) {
  return (v: string): number => {
    if (!/^\d{1,9}$/.test(v)) throw new UsageError(`${name} must be a whole number (0, 1, …), got '${v}'`);
    return Number(v);
  };
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

export function parseDuration(raw: string): number {
  const m = /^(\d+)([smhd])$/.exec(raw.trim());
  if (!m) throw new UsageError(`invalid --older-than '${raw}': give a number and a unit s, m, h or d (e.g. 90m, 36h, 7d)`);
  return Number(m[1]) * UNITS[m[2]!]! * 1000;
}
