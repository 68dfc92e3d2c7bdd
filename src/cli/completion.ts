// Shell completion scripts (bash, zsh, fish), written from the command tree itself so that a
// new command or option completes without touching this file.

import type { Argument, Command, Option } from 'commander';

interface Spec {
  readonly name: string;
  readonly description: string;
  readonly options: readonly Option[];
  /** What its positional arguments complete to: their choices, file names, or nothing (it takes none). */
  readonly positional:
    { readonly kind: 'choices'; readonly choices: readonly string[] } | { readonly kind: 'files' | 'none' };
}

function positionalOf(args: readonly Argument[]): Spec['positional'] {
  const first = args[0];
  if (!first) return { kind: 'none' };
  return first.argChoices ? { kind: 'choices', choices: first.argChoices } : { kind: 'files' };
}

function specs(program: Command): Spec[] {
  return program.commands.map((c) => ({
    name: c.name(),
    description: c.description(),
    options: c.options,
    positional: positionalOf(c.registeredArguments),
  }));
}

const longs = (opts: readonly Option[]) => opts.map((o) => o.long).filter((l): l is string => Boolean(l));
const takesValue = (o: Option) => o.required || o.optional;
const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

/** Options whose value is a file, a path or a URI: only these complete file names. */
const PATH_OPTIONS = new Set(['--config', '--target', '--staging-dir', '--job']);
/** What a value completes to: the option's own choices, file names, or nothing (a number, an id). */
function valueKind(o: Option): 'choices' | 'files' | 'none' {
  if (o.argChoices) return 'choices';
  return PATH_OPTIONS.has(o.long ?? '') ? 'files' : 'none';
}

/** One bash case arm per option that takes a value, keyed by subcommand: each offers its own choices. */
function bashValueCases(program: Command, cmds: readonly Spec[]): string[] {
  const arm = (key: string, o: Option) => {
    const kind = valueKind(o);
    const reply =
      kind === 'choices'
        ? `COMPREPLY=( $(compgen -W ${quote(o.argChoices!.join(' '))} -- "$cur") )`
        : kind === 'files'
          ? 'COMPREPLY=( $(compgen -f -- "$cur") )'
          : 'COMPREPLY=()';
    return `    ${key}) ${reply}; return ;;`;
  };
  const own = cmds.flatMap((c) =>
    c.options.filter((o) => o.long && takesValue(o)).map((o) => arm(`${c.name}:${o.long}`, o)),
  );
  const globals = program.options.filter((o) => o.long && takesValue(o)).map((o) => arm(`*:${o.long}`, o));
  return [...own, ...globals];
}

function bash(program: Command): string {
  const cmds = specs(program);
  const globals = longs(program.options).join(' ');
  // pos: what a word that is no option completes to: 'files', the choices, or '' (nothing).
  const pos = (c: Spec) =>
    c.positional.kind === 'choices' ? c.positional.choices.join(' ') : c.positional.kind === 'files' ? 'files' : '';
  const cases = cmds
    .map((c) => `    ${c.name}) opts=${quote(longs(c.options).join(' '))}; pos=${quote(pos(c))} ;;`)
    .join('\n');
  return `# stagecommit completion for bash: eval "$(stagecommit completion bash)"
_stagecommit() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local cmds=${quote(cmds.map((c) => c.name).join(' '))} globals=${quote(globals)} sub="" opts="" pos="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case " $cmds " in *" \${COMP_WORDS[i]} "*) sub="\${COMP_WORDS[i]}"; break ;; esac
  done
  case "$sub:$prev" in
${bashValueCases(program, cmds).join('\n')}
  esac
  if [[ -z "$sub" ]]; then
    COMPREPLY=( $(compgen -W "$cmds $globals" -- "$cur") ); return
  fi
  case "$sub" in
${cases}
  esac
  if [[ "$cur" == -* ]]; then COMPREPLY=( $(compgen -W "$opts $globals --help" -- "$cur") )
  elif [[ "$pos" == files ]]; then COMPREPLY=( $(compgen -f -- "$cur") )
  elif [[ -n "$pos" ]]; then COMPREPLY=( $(compgen -W "$pos" -- "$cur") )
  else COMPREPLY=(); fi
}
complete -o filenames -F _stagecommit stagecommit
`;
}

function zshArg(o: Option): string {
  const desc = o.description.replace(/[[\]':]/g, ' ');
  const kind = valueKind(o);
  const value = !takesValue(o)
    ? ''
    : kind === 'choices'
      ? `:value:(${o.argChoices!.join(' ')})`
      : kind === 'files'
        ? ':value:_files'
        : ':value: ';
  return quote(`${o.long}[${desc}]${value}`);
}

/** A subcommand's positional arguments: file names, its choices, or none. */
function zshPositional(c: Spec): string {
  if (c.positional.kind === 'files') return " '*:file:_files'";
  if (c.positional.kind === 'choices') return ` ${quote(`1:value:(${c.positional.choices.join(' ')})`)}`;
  return '';
}

function zsh(program: Command): string {
  const cmds = specs(program);
  const globals = program.options
    .filter((o) => o.long)
    .map(zshArg)
    .join(' ');
  const described = cmds.map((c) => quote(`${c.name}:${c.description.replace(/:/g, ' ')}`)).join(' ');
  const cases = cmds
    .map(
      (c) =>
        `    (${c.name}) _arguments ${globals} ${c.options
          .filter((o) => o.long)
          .map(zshArg)
          .join(' ')}${zshPositional(c)} ;;`,
    )
    .join('\n');
  return `#compdef stagecommit
# stagecommit completion for zsh: eval "$(stagecommit completion zsh)", or save as _stagecommit in $fpath
_stagecommit() {
  local -a cmds; cmds=(${described})
  local sub i
  for (( i = 2; i < CURRENT; i++ )); do
    if (( \${cmds[(I)\${words[i]}:*]} )); then sub=\${words[i]}; break; fi
  done
  if [[ -z $sub ]]; then
    _describe command cmds; return
  fi
  case $sub in
${cases}
  esac
}
compdef _stagecommit stagecommit
`;
}

function fish(program: Command): string {
  const cmds = specs(program);
  const flag = (o: Option, cond: string) => {
    // -x: a value and no file names; -r: a value, file names offered.
    const kind = valueKind(o);
    const value = !takesValue(o)
      ? ''
      : kind === 'choices'
        ? ` -x -a ${quote(o.argChoices!.join(' '))}`
        : kind === 'files'
          ? ' -r'
          : ' -x';
    return `complete -c stagecommit${cond} -l ${o.long!.slice(2)}${value} -d ${quote(o.description)}`;
  };
  const lines = [
    '# stagecommit completion for fish: stagecommit completion fish | source',
    ...cmds.map((c) => `complete -c stagecommit -f -n __fish_use_subcommand -a ${c.name} -d ${quote(c.description)}`),
    ...program.options.filter((o) => o.long).map((o) => flag(o, '')),
    // A subcommand that takes no path offers no file names; one with choices offers them.
    ...cmds.flatMap((c) => {
      const cond = ` -n '__fish_seen_subcommand_from ${c.name}'`;
      if (c.positional.kind === 'choices')
        return [`complete -c stagecommit${cond} -f -a ${quote(c.positional.choices.join(' '))}`];
      return c.positional.kind === 'none' ? [`complete -c stagecommit${cond} -f`] : [];
    }),
    ...cmds.flatMap((c) =>
      c.options.filter((o) => o.long).map((o) => flag(o, ` -n '__fish_seen_subcommand_from ${c.name}'`)),
    ),
  ];
  return lines.join('\n') + '\n';
}

export const SHELLS = { bash, zsh, fish } as const;
export type Shell = keyof typeof SHELLS;
