// Shell completion scripts (bash, zsh, fish), written from the command tree itself so that a
// new command or option completes without touching this file.

import type { Command, Option } from 'commander';

interface Spec {
  readonly name: string;
  readonly description: string;
  readonly options: readonly Option[];
}

function specs(program: Command): Spec[] {
  return program.commands.map((c) => ({ name: c.name(), description: c.description(), options: c.options }));
}

const longs = (opts: readonly Option[]) => opts.map((o) => o.long).filter((l): l is string => Boolean(l));
const valued = (opts: readonly Option[]) => opts.filter((o) => o.required || o.optional);
const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

function bash(program: Command): string {
  const cmds = specs(program);
  const globals = longs(program.options).join(' ');
  const cases = cmds.map((c) => `    ${c.name}) opts=${quote(longs(c.options).join(' '))} ;;`).join('\n');
  const choices = [...program.options, ...cmds.flatMap((c) => c.options)]
    .filter((o) => o.argChoices && o.long)
    .map((o) => `    ${o.long}) COMPREPLY=( $(compgen -W ${quote(o.argChoices!.join(' '))} -- "$cur") ); return ;;`);
  const needsValue = [
    ...new Set(
      [...valued(program.options), ...cmds.flatMap((c) => valued(c.options))].map((o) => o.long).filter(Boolean),
    ),
  ].join('|');
  return `# stagecommit completion for bash: eval "$(stagecommit completion bash)"
_stagecommit() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local cmds=${quote(cmds.map((c) => c.name).join(' '))} globals=${quote(globals)} sub="" opts="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case " $cmds " in *" \${COMP_WORDS[i]} "*) sub="\${COMP_WORDS[i]}"; break ;; esac
  done
  case "$prev" in
${[...new Set(choices)].join('\n')}
    ${needsValue}) COMPREPLY=( $(compgen -f -- "$cur") ); return ;;
  esac
  if [[ -z "$sub" ]]; then
    COMPREPLY=( $(compgen -W "$cmds $globals" -- "$cur") ); return
  fi
  case "$sub" in
${cases}
  esac
  if [[ "$cur" == -* ]]; then COMPREPLY=( $(compgen -W "$opts $globals --help" -- "$cur") )
  else COMPREPLY=( $(compgen -f -- "$cur") ); fi
}
complete -o filenames -F _stagecommit stagecommit
`;
}

function zshArg(o: Option): string {
  const desc = o.description.replace(/[[\]':]/g, ' ');
  const value = o.argChoices ? `:value:(${o.argChoices.join(' ')})` : o.required || o.optional ? ':value:_files' : '';
  return quote(`${o.long}[${desc}]${value}`);
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
          .join(' ')} '*:file:_files' ;;`,
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
    const value = o.argChoices ? ` -x -a ${quote(o.argChoices.join(' '))}` : o.required || o.optional ? ' -r' : '';
    return `complete -c stagecommit${cond} -l ${o.long!.slice(2)}${value} -d ${quote(o.description)}`;
  };
  const lines = [
    '# stagecommit completion for fish: stagecommit completion fish | source',
    ...cmds.map((c) => `complete -c stagecommit -f -n __fish_use_subcommand -a ${c.name} -d ${quote(c.description)}`),
    ...program.options.filter((o) => o.long).map((o) => flag(o, '')),
    ...cmds.flatMap((c) =>
      c.options.filter((o) => o.long).map((o) => flag(o, ` -n '__fish_seen_subcommand_from ${c.name}'`)),
    ),
  ];
  return lines.join('\n') + '\n';
}

export const SHELLS = { bash, zsh, fish } as const;
export type Shell = keyof typeof SHELLS;
