/**
 * The log-event contract as written in docs/contracts/C4-observability.md.
 * Tests read the document itself, so an event the server writes that the
 * contract does not list — or a listed field that drifts — fails a test.
 */
import { readFileSync } from 'node:fs';

/** One accepted shape of a field: a JSON type or an exact literal value. */
export type FieldType = { kind: 'string' } | { kind: 'string[]' } | { kind: 'integer' } | { kind: 'null' } | { kind: 'literal'; value: string };

export interface EventContract {
  event: string;
  level: string;
  /** Field name → the shapes it may take (any one of them). */
  fields: Map<string, FieldType[]>;
  section: 'pinned' | 'operational';
}

export interface C4EventContracts {
  common: Map<string, FieldType[]>;
  events: Map<string, EventContract>;
}

const DOC = new URL('../../../docs/contracts/C4-observability.md', import.meta.url);

export function readC4EventContracts(markdown = readFileSync(DOC, 'utf8')): C4EventContracts {
  const commonRows = tableRows(markdown, '### Common fields');
  if (commonRows.length !== 1) throw new Error('C4: expected one row under "Common fields"');
  const events = new Map<string, EventContract>();
  for (const section of ['pinned', 'operational'] as const) {
    const heading = section === 'pinned' ? '### Pinned events' : '### Operational events';
    for (const [name, level, fields] of tableRows(markdown, heading)) {
      const event = /^`([a-z_]+)`$/.exec(name ?? '')?.[1];
      if (!event || !level || fields === undefined) throw new Error(`C4: malformed event row ${name}`);
      events.set(event, { event, level, fields: parseFields(fields), section });
    }
  }
  return { common: parseFields(commonRows[0]![2] ?? ''), events };
}

/** Does `value` have one of the accepted shapes? */
export function matches(value: unknown, types: readonly FieldType[]): boolean {
  return types.some((type) => {
    switch (type.kind) {
      case 'string':
        return typeof value === 'string';
      case 'string[]':
        return Array.isArray(value) && value.every((item) => typeof item === 'string');
      case 'integer':
        return Number.isInteger(value);
      case 'null':
        return value === null;
      case 'literal':
        return value === type.value;
    }
  });
}

/** Rows of the first Markdown table after `heading`, header and separator dropped. */
function tableRows(markdown: string, heading: string): string[][] {
  const start = markdown.search(new RegExp(`^${heading.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b.*$`, 'm'));
  if (start < 0) throw new Error(`C4: heading "${heading}" not found`);
  const lines = markdown.slice(start).split('\n').slice(1);
  const first = lines.findIndex((line) => line.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.slice(1, -1).split('|').map((cell) => cell.trim()));
  }
  return rows;
}

/** "`key` string, `holderSessionId` string/null, `op` renew/release" → field map. */
function parseFields(cell: string): Map<string, FieldType[]> {
  const fields = new Map<string, FieldType[]>();
  for (const part of cell.split(',').map((p) => p.trim()).filter(Boolean)) {
    const match = /^`([A-Za-z]+)` (\S+)$/.exec(part);
    if (!match) throw new Error(`C4: cannot read field "${part}"`);
    fields.set(
      match[1]!,
      match[2]!.split('/').map((token): FieldType =>
        token === 'string' || token === 'string[]' || token === 'integer' || token === 'null' ? { kind: token } : { kind: 'literal', value: token },
      ),
    );
  }
  return fields;
}

/** Everything wrong with one log line against the contract (empty when it conforms). */
export function violationsOf(line: Record<string, unknown>, contracts: C4EventContracts): string[] {
  const event = String(line.event);
  const contract = contracts.events.get(event);
  if (!contract) return [`event "${event}" is not listed in C4`];
  const problems: string[] = [];
  const expected = new Map([...contracts.common, ...contract.fields]);
  for (const [field, types] of expected) {
    if (!(field in line)) problems.push(`${event}: missing ${field}`);
    else if (!matches(line[field], types)) problems.push(`${event}: ${field}=${JSON.stringify(line[field])} is not ${JSON.stringify(types)}`);
  }
  for (const field of Object.keys(line)) if (!expected.has(field)) problems.push(`${event}: unlisted field ${field}`);
  if (line.level !== contract.level) problems.push(`${event}: level ${String(line.level)}, C4 says ${contract.level}`);
  return problems;
}
