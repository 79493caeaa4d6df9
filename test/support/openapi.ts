/**
 * Checks an HTTP answer against the committed OpenAPI document
 * (docs/openapi.json): its route must document the status, the content type
 * must be one the status lists, and a JSON body must validate (Ajv, JSON
 * Schema 2020-12, as OpenAPI 3.1 says) against that status's schema. An error
 * body's `retryable` must also be the one the C3 error table gives its code.
 * Answers of unknown routes (no operation for the method and path) must be
 * the pinned 404 NOT_FOUND. test/support/http.ts runs every answer through it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { ERROR_TABLE, errorBodySchema, type ErrorCode } from '../../contract/errors.js';

const DOCUMENT_URI = 'https://holdfast.invalid/openapi.json';
const DOCUMENT_PATH = path.resolve(import.meta.dirname, '../../docs/openapi.json');

interface Operation {
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
}
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
}

export interface AnswerToCheck {
  method: string;
  /** The request path, with any query string. */
  path: string;
  status: number;
  /** The response's content-type header, if any. */
  contentType: string | null;
  /** The raw body text. */
  text: string;
}

/** The JSON pointer of `segments` as a URI fragment. */
const fragment = (...segments: string[]) => `#/${segments.map((s) => encodeURIComponent(s.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/')}`;

export class OpenApiChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly routes: { template: string; pattern: RegExp; methods: Record<string, Operation> }[];
  private readonly notFound: ValidateFunction;

  constructor(readonly document: OpenApiDocument) {
    this.ajv.addSchema(document as object, DOCUMENT_URI);
    this.routes = Object.entries(document.paths).map(([template, methods]) => ({
      template,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
      methods,
    }));
    this.notFound = this.ajv.compile(errorBodySchema(['NOT_FOUND']));
  }

  /** What is wrong with `answer` by the document; empty when it conforms. */
  problems(answer: AnswerToCheck): string[] {
    // As sent: fetch resolves `.` and `..` segments before the server sees the path.
    const requestPath = new URL(answer.path, 'http://holdfast.invalid').pathname;
    const method = answer.method.toLowerCase();
    const route = this.routes.find((candidate) => candidate.pattern.test(requestPath) && candidate.methods[method]);
    const body = parse(answer.text);
    if (!route) {
      if (answer.status !== 404) return [`no documented operation for ${answer.method} ${requestPath}, yet the answer is ${answer.status} (only 404 NOT_FOUND is allowed)`];
      return this.notFound(body) ? [] : [`unknown route: the 404 body is not the pinned NOT_FOUND body: ${this.ajv.errorsText(this.notFound.errors)}`];
    }
    const operation = route.methods[method]!;
    const statusKey = [String(answer.status), `${String(answer.status)[0]}XX`, 'default'].find((key) => operation.responses[key]);
    const where = `${answer.method} ${route.template} → ${answer.status}`;
    if (!statusKey) return [`${where}: status not documented (documented: ${Object.keys(operation.responses).join(', ')})`];
    const content = operation.responses[statusKey]!.content;
    if (!content) return answer.text === '' ? [] : [`${where}: documented without a body, but one came: ${answer.text.slice(0, 200)}`];
    const mediaType = (answer.contentType ?? '').split(';')[0]!.trim().toLowerCase();
    if (!content[mediaType]) return [`${where}: content type ${JSON.stringify(answer.contentType)} not documented (documented: ${Object.keys(content).join(', ')})`];
    // JSON bodies are checked against their schema; others (metrics text, an audit export's JSON lines) by type only.
    if (!/^application\/([^/]+\+)?json$/.test(mediaType)) return [];
    if (body === undefined) return [`${where}: body is not JSON: ${answer.text.slice(0, 200)}`];
    const validate = this.validator(fragment('paths', route.template, method, 'responses', statusKey, 'content', mediaType, 'schema'));
    const problems = validate(body) ? [] : [`${where}: body does not match the documented schema: ${this.ajv.errorsText(validate.errors)}; body: ${answer.text.slice(0, 500)}`];
    if (answer.status >= 400 && problems.length === 0) problems.push(...errorTableProblems(where, answer.status, body));
    return problems;
  }

  /** Throws, naming every problem, unless `answer` conforms. */
  assert(answer: AnswerToCheck): void {
    const problems = this.problems(answer);
    if (problems.length > 0) throw new Error(`answer does not match docs/openapi.json:\n${problems.join('\n')}`);
  }

  private validator(pointer: string): ValidateFunction {
    let validate = this.validators.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOCUMENT_URI}${pointer}` });
      this.validators.set(pointer, validate);
    }
    return validate;
  }
}

/** The C3 error table agrees: the code belongs to the status and `retryable` is the code's. */
function errorTableProblems(where: string, status: number, body: unknown): string[] {
  const error = (body as { error?: { code?: string; retryable?: boolean } }).error;
  const row = error?.code !== undefined ? ERROR_TABLE[error.code as ErrorCode] : undefined;
  if (!row) return [`${where}: ${JSON.stringify(error?.code)} is not a code of the error table`];
  if (row.status !== status) return [`${where}: ${error!.code} belongs to status ${row.status}`];
  if (row.retryable !== error!.retryable) return [`${where}: ${error!.code} must have retryable: ${row.retryable}`];
  return [];
}

function parse(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

let committed: OpenApiChecker | undefined;

/** The checker of the committed docs/openapi.json (built once per test file). */
export function openApiChecker(): OpenApiChecker {
  committed ??= new OpenApiChecker(JSON.parse(readFileSync(DOCUMENT_PATH, 'utf8')) as OpenApiDocument);
  return committed;
}
