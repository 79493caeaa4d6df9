/**
 * What every command needs from the global options: the server URL, the token
 * (cli/credentials.ts rules), and how to print (`-o table|wide|json`).
 */
import type { Command } from 'commander';
import { AdminApi } from './admin-api.js';
import { chooseToken, type WithheldLocalToken } from './credentials.js';
import { CliError } from './exit-codes.js';

export type OutputFormat = 'table' | 'wide' | 'json';
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['table', 'wide', 'json'];

interface GlobalOptions {
  url: string;
  token?: string;
  tokenFile?: string;
  output?: OutputFormat;
  json?: boolean;
}

export class CliContext {
  /** Set when the local operator token was not sent (HOLDFAST_URL not loopback, or the server there did not prove itself). */
  withheldLocalToken: WithheldLocalToken | undefined;

  constructor(private readonly program: Command) {}

  private get options(): GlobalOptions {
    return this.program.opts<GlobalOptions>();
  }

  get url(): string {
    return this.options.url;
  }

  /** `--json` is kept as the old spelling of `-o json`. */
  get format(): OutputFormat {
    return this.options.json ? 'json' : (this.options.output ?? 'table');
  }

  /** The bearer token by the credentials rules; undefined when there is none to send. */
  async token(): Promise<string | undefined> {
    if (this.options.token !== undefined) {
      throw new CliError(
        'TOKEN_ON_COMMAND_LINE',
        '--token is no longer accepted: a token on the command line shows in `ps` and shell history. ' +
          'Put it in a file and pass --token-file FILE (or HOLDFAST_TOKEN_FILE=FILE), or set HOLDFAST_TOKEN',
      );
    }
    const choice = await chooseToken({
      url: this.url,
      tokenFile: this.options.tokenFile,
      envToken: process.env.HOLDFAST_TOKEN,
      dataDir: process.env.HOLDFAST_DATA_DIR,
    });
    if (choice.token === undefined) this.withheldLocalToken = choice.withheldLocalToken;
    return choice.token;
  }

  async api(): Promise<AdminApi> {
    return new AdminApi(this.url, await this.token());
  }

  /** JSON of `value` under `-o json`, else the human rendering (wider under `-o wide`). */
  print(value: unknown, human: (wide: boolean) => string): void {
    console.log(this.format === 'json' ? JSON.stringify(value, null, 2) : human(this.format === 'wide'));
  }
}

/** `-o json` / `--output=json` / `-ojson` / `--json` anywhere before `--`: for errors raised before options are parsed. */
export function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  const args = end === -1 ? argv : argv.slice(0, end);
  return args.some(
    (arg, i) =>
      arg === '--json' ||
      arg === '-ojson' ||
      arg === '--output=json' ||
      ((arg === '-o' || arg === '--output') && args[i + 1] === 'json'),
  );
}
