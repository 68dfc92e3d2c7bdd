// Parsers for option values shared by the commands: each throws a one-line UsageError (exit 2).

import { UsageError } from '../errors.js';

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function positiveInt(name: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v) || Number(v) < 1)
      throw new UsageError({ reason: 'number-invalid', option: name, value: v, positive: true });
    return Number(v);
  };
}

export function wholeNumber(name: string) {
  return (v: string): number => {
    if (!/^\d{1,9}$/.test(v))
      throw new UsageError({ reason: 'number-invalid', option: name, value: v, positive: false });
    return Number(v);
  };
}
