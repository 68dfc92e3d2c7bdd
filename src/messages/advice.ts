// Advice given by more than one message, written once.

/** The recover command, quoted as a user types it; with the handle when the message knows it. */
export function recoverCommand(handle?: string): string {
  return `'stagecommit recover${handle === undefined ? '' : ` --job ${handle}`}'`;
}

/** "run 'stagecommit recover [--job H]' WHY": what finishes or undoes a step that was killed. */
export function recoverAdvice(o: { readonly handle?: string; readonly why?: string } = {}): string {
  return `run ${recoverCommand(o.handle)}${o.why === undefined ? '' : ` ${o.why}`}`;
}

/** The command that removes a leftover nothing can be adopted from, quoted as a user types it. */
export function cleanOrphansDeleteCommand(): string {
  return "'stagecommit clean-orphans --delete'";
}

/** The status command that lists the tasks a rerun still has to run, quoted as a user types it. */
export function tasksToRunCommand(): string {
  return "'stagecommit status --tasks-to-run'";
}

/** What a stage run made, taken back because it can be in no output: its files, or (--print-path) its dir. */
export type TakenBack = 'files' | 'dir';

export function takenBackWords(taken: TakenBack): string {
  return taken === 'files' ? 'the files were taken back' : 'what it made was taken back';
}
