/** `holdfast completion bash|zsh`: print a completion script generated from the command tree. */
import { Argument, type Command } from 'commander';
import { completionScript, COMPLETION_SHELLS, type CompletionShell } from '../completion-script.js';

export function registerCompletion(program: Command): void {
  program
    .command('completion')
    .description('print shell completion: source <(holdfast completion bash)')
    .addArgument(new Argument('<shell>', 'bash or zsh').choices(COMPLETION_SHELLS))
    .action((shell: CompletionShell) => {
      process.stdout.write(completionScript(program, shell));
    });
}
