// A phase's operations as the planner and the plan reader build them: plain file moves between
// the same two directories are held as one `moves` group, and spelled out one by one where each
// file needs its own operation (the plan file, a dry run, a store without bulk rename).

import { ownString } from '../util/own-string.js';
import { childLoc } from './tree.js';
import type { Loc, PlanOp, PlanPhase, SingleOp } from './types.js';

/** `loc` as its directory and name: childLoc(dir, name) is `loc` again ('t:x' is 't:' and 'x'). */
function splitLoc(loc: Loc): [dir: Loc, name: string] {
  const cut = loc.lastIndexOf('/');
  return cut < 0 ? [loc.slice(0, 2), loc.slice(2)] : [loc.slice(0, cut), loc.slice(cut + 1)];
}

type Moves = Extract<PlanOp, { op: 'moves' }> & { readonly names: string[] };

/**
 * A phase being built: a plain file move joins the group of moves between the same two
 * directories, wherever in the phase it is. Order inside a phase does not matter: no operation
 * of a phase depends on another.
 */
export class PhaseOps {
  readonly ops: PlanOp[] = [];
  private readonly groups = new Map<string, Moves>();

  push(op: PlanOp): void {
    if (op.op !== 'move' || op.dir === true || op.replace === true) {
      this.ops.push(op);
      return;
    }
    const [fromDir, name] = splitLoc(op.from);
    const [toDir, toName] = splitLoc(op.to);
    if (name === '' || name !== toName) {
      this.ops.push(op);
      return;
    }
    const key = `${fromDir}\0${toDir}`; // NUL is in no path
    const group = this.groups.get(key);
    if (group) group.names.push(ownString(name));
    else {
      const made: Moves = { op: 'moves', from: fromDir, to: toDir, names: [ownString(name)] };
      this.groups.set(key, made);
      this.ops.push(made);
    }
  }
}

/** The single operations `op` stands for. */
function* spelledOut(op: PlanOp): Generator<SingleOp> {
  if (op.op !== 'moves') {
    yield op;
    return;
  }
  for (const name of op.names) yield { op: 'move', from: childLoc(op.from, name), to: childLoc(op.to, name) };
}

/** A phase's single operations, in order. */
export function* singleOps(phase: PlanPhase): Generator<SingleOp> {
  for (const op of phase) yield* spelledOut(op);
}

/** How many single operations a phase holds (its lines in the plan file). */
export function opCount(phase: PlanPhase): number {
  let n = 0;
  for (const op of phase) n += op.op === 'moves' ? op.names.length : 1;
  return n;
}
