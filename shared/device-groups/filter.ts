import { isIP } from 'node:net';
import { z } from 'zod';
import type { Params } from '../db/db.ts';
import { likePattern } from '../db/like-pattern.ts';
import { postureCategories, postureStatuses } from '../posture/catalog.ts';
import {
  type Bind,
  type FieldType,
  type FilterField,
  filterFields,
  type PostureMatch,
  postureMatchSql,
  type SqlCast,
} from './filter-fields.ts';

/**
 * The filter language of dynamic groups: a typed JSON tree
 * `{ all: [...] } | { any: [...] } | { not: … } | { field, op, value }`, checked here and compiled to
 * parameterized SQL over the device row `d`. No text of a filter ever reaches SQL except as a bound parameter:
 * field names select an entry of filter-fields.ts, operators an entry of `operators` below.
 */
export type Condition = { field: string; op: Operator; value: unknown };
export type DeviceFilter = { all: DeviceFilter[] } | { any: DeviceFilter[] } | { not: DeviceFilter } | Condition;

export const maxFilterDepth = 8;
export const maxFilterConditions = 100;
const maxListValues = 100;
const maxRegexLength = 200;

export interface FilterIssue {
  path: (string | number)[];
  message: string;
}

const text = z.string().min(1).max(255);
const timestamp = z.iso.datetime({ offset: true });
const ip = z.string().refine((v) => isIP(v) !== 0, 'Expected an IPv4 or IPv6 address');
const cidr = z.string().refine((v) => {
  const [address = '', bits, ...rest] = v.split('/');
  const family = isIP(address);
  const max = family === 4 ? 32 : 128;
  return family !== 0 && rest.length === 0 && (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= max));
}, 'Expected an address with an optional prefix length, e.g. 10.0.0.0/8');
/**
 * A regular expression PostgreSQL runs without surprises: short, no back-references, lookaround or embedded
 * options (the features where its engine can take exponential time or the syntaxes differ), and valid.
 */
const regex = z
  .string()
  .min(1)
  .max(maxRegexLength)
  .refine((v) => !/\\[1-9]|\(\?|\*\*\*/.test(v), 'Back-references, lookaround and embedded options are not allowed')
  .refine((v) => {
    try {
      new RegExp(v);
      return true;
    } catch {
      return false;
    }
  }, 'Not a valid regular expression');

/** How a field type's values are checked, bound and compared (text compares ignoring case). */
const types: Record<FieldType, { value: (field: FilterField) => z.ZodType; cast: SqlCast; fold?: string }> = {
  text: { value: () => text, cast: 'text', fold: 'lower' },
  enum: { value: (field) => z.enum(field.values as [string, ...string[]]), cast: 'text' },
  uuid: { value: () => z.uuid(), cast: 'uuid' },
  timestamp: { value: () => timestamp, cast: 'timestamptz' },
  ip: { value: () => ip, cast: 'inet' },
  boolean: { value: () => z.boolean(), cast: 'boolean' },
  posture: {
    value: () =>
      z.strictObject({
        category: z.enum(postureCategories),
        product: text.optional(),
        status: z.enum(postureStatuses).optional(),
      }),
    cast: 'text',
  },
};

type Compile = (column: string, value: never, bind: Bind, type: FieldType) => string;

interface OperatorDef {
  types: readonly FieldType[];
  /** The value the operator takes for a field (default: one value of the field's type). */
  value?: (field: FilterField) => z.ZodType;
  sql: Compile;
  /** A comparison with a bound (timestamps): the comparison and the bound's SQL, for fields with an `hour` copy. */
  bound?: (value: never, bind: Bind) => { cmp: '>' | '>=' | '<' | '<='; sql: string };
}

/** A timestamp compared with a bound; the bound also narrows a field's indexed hour (compileFilter). */
function comparison<T>(cmp: '>' | '>=' | '<' | '<=', bound: (value: T, bind: Bind) => string) {
  return {
    types: ['timestamp'] as const,
    bound: (value: T, bind: Bind) => ({ cmp, sql: bound(value, bind) }),
    sql: (column: string, value: T, bind: Bind) => `${column} ${cmp} ${bound(value, bind)}`,
  };
}
const at = (value: string, bind: Bind) => bind(value, 'timestamptz');

const folded = (type: FieldType, sql: string) => (types[type].fold ? `${types[type].fold}(${sql})` : sql);
const scalar = (field: FilterField) => types[field.type].value(field);

const operators = {
  equals: {
    types: ['text', 'enum', 'uuid', 'ip', 'boolean'],
    sql: (column, value: string | boolean, bind, type) =>
      `${folded(type, column)} = ${folded(type, bind(value, types[type].cast))}`,
  },
  notEquals: {
    types: ['text', 'enum', 'uuid', 'ip'],
    sql: (column, value: string, bind, type) =>
      `${folded(type, column)} IS DISTINCT FROM ${folded(type, bind(value, types[type].cast))}`,
  },
  in: {
    types: ['text', 'enum', 'uuid', 'ip'],
    value: (field) => z.array(scalar(field)).min(1).max(maxListValues),
    // One parameter per value, no subquery: a device's groups evaluate hundreds of filters in one statement.
    sql: (column, value: string[], bind, type) =>
      `${folded(type, column)} IN (${value.map((v) => folded(type, bind(v, types[type].cast))).join(', ')})`,
  },
  contains: {
    types: ['text'],
    sql: (column, value: string, bind) => `${column} ILIKE ${bind(likePattern(value), 'text')}`,
  },
  startsWith: {
    types: ['text'],
    sql: (column, value: string, bind) => `${column} ILIKE ${bind(likePattern(value).slice(1), 'text')}`,
  },
  endsWith: {
    types: ['text'],
    sql: (column, value: string, bind) => `${column} ILIKE ${bind(likePattern(value).slice(0, -1), 'text')}`,
  },
  matches: {
    types: ['text'],
    value: () => regex,
    sql: (column, value: string, bind) => `${column} ~* ${bind(value, 'text')}`,
  },
  gt: comparison('>', at),
  gte: comparison('>=', at),
  lt: comparison('<', at),
  lte: comparison('<=', at),
  before: comparison('<', at),
  after: comparison('>', at),
  withinDays: {
    ...comparison('>=', (value: number, bind) => `now() - make_interval(days => ${bind(value, 'int')})`),
    value: () => z.number().int().min(1).max(36_500),
  },
  inCidr: {
    types: ['ip'],
    value: () => cidr,
    sql: (column, value: string, bind) => `${column} <<= ${bind(value, 'inet')}`,
  },
  // "Devices still running Datto RMM" is { field: 'posture', op: 'has', value: { category: 'rmm', product: 'Datto RMM', status: 'active' } }.
  has: {
    types: ['posture'],
    sql: (column, value: PostureMatch, bind) => postureMatchSql(column, value, bind),
  },
  exists: {
    types: ['text', 'enum', 'uuid', 'timestamp', 'ip'],
    value: () => z.boolean(),
    sql: (column, value: boolean) => `${column} IS ${value ? 'NOT NULL' : 'NULL'}`,
  },
} satisfies Record<string, OperatorDef>;

export type Operator = keyof typeof operators;
export const operatorNames = Object.keys(operators) as Operator[];

/** The field entry a condition names (`hostname`, or `name:key` for keyed fields), or why there is none. */
function resolveField(name: string): { field: FilterField; key?: string } | string {
  const colon = name.indexOf(':');
  const base = colon === -1 ? name : name.slice(0, colon);
  const key = colon === -1 ? undefined : name.slice(colon + 1);
  const field = Object.hasOwn(filterFields, base) ? filterFields[base] : undefined;
  if (!field) return `Unknown field ${JSON.stringify(base)}; known: ${Object.keys(filterFields).join(', ')}`;
  if (field.keyed && !key) return `${base} takes a key: ${base}:<key>`;
  if (!field.keyed && key !== undefined) return `${base} takes no key`;
  return { field, key };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Checks a filter: every issue with its path under the filter (`all.0.op`), or none. Deeper than 8 levels or
 * with more than 100 conditions, unknown fields, operators a field's type does not take, and values of the
 * wrong type are issues.
 */
export function filterIssues(input: unknown): FilterIssue[] {
  const issues: FilterIssue[] = [];
  let conditions = 0;
  const walk = (node: unknown, path: (string | number)[], depth: number): void => {
    if (depth > maxFilterDepth) {
      issues.push({ path, message: `A filter may nest at most ${maxFilterDepth} levels` });
      return;
    }
    if (!isObject(node)) {
      issues.push({ path, message: 'Expected an object: { all }, { any }, { not } or { field, op, value }' });
      return;
    }
    const keys = Object.keys(node);
    const group = keys.find((key) => key === 'all' || key === 'any' || key === 'not');
    if (group) {
      for (const key of keys) if (key !== group) issues.push({ path: [...path, key], message: `Unknown field ${key}` });
      const children = node[group];
      if (group === 'not') {
        walk(children, [...path, 'not'], depth + 1);
        return;
      }
      if (!Array.isArray(children) || children.length === 0) {
        issues.push({ path: [...path, group], message: 'Expected a non-empty array of filters' });
        return;
      }
      children.forEach((child, i) => {
        walk(child, [...path, group, i], depth + 1);
      });
      return;
    }
    conditions += 1;
    for (const key of keys)
      if (key !== 'field' && key !== 'op' && key !== 'value')
        issues.push({ path: [...path, key], message: `Unknown field ${key}` });
    if (typeof node.field !== 'string') {
      issues.push({ path: [...path, 'field'], message: 'Expected a field name' });
      return;
    }
    const resolved = resolveField(node.field);
    if (typeof resolved === 'string') {
      issues.push({ path: [...path, 'field'], message: resolved });
      return;
    }
    const op = typeof node.op === 'string' && Object.hasOwn(operators, node.op) ? operators[node.op as Operator] : null;
    if (!op) {
      issues.push({ path: [...path, 'op'], message: `Unknown operator; known: ${operatorNames.join(', ')}` });
      return;
    }
    const type = resolved.field.type;
    if (!(op.types as readonly FieldType[]).includes(type)) {
      const allowed = operatorNames.filter((name) => (operators[name].types as readonly FieldType[]).includes(type));
      issues.push({
        path: [...path, 'op'],
        message: `${node.field} (${type}) takes ${allowed.join(', ')}, not ${String(node.op)}`,
      });
      return;
    }
    const value = ('value' in op ? op.value : scalar)(resolved.field).safeParse(node.value);
    if (!value.success)
      for (const issue of value.error.issues)
        issues.push({ path: [...path, 'value', ...(issue.path as (string | number)[])], message: issue.message });
  };
  walk(input, [], 1);
  if (conditions > maxFilterConditions)
    issues.push({
      path: [],
      message: `A filter may hold at most ${maxFilterConditions} conditions, not ${conditions}`,
    });
  return issues;
}

/** Bound parameters of one statement, named f0, f1, … so they never meet the statement's own. */
export function filterParams(): { params: Params; bind: Bind } {
  const params: Params = {};
  let next = 0;
  return {
    params,
    bind: (value, cast) => {
      const name = `f${next++}`;
      params[name] = value;
      return `:${name}::${cast}`;
    },
  };
}

/**
 * The SQL condition of a checked filter over the device row `d`. A `not` treats an unknown (NULL) answer as false
 * before negating it, so every node answers true or false and `not` always means "every other device".
 */
export function compileFilter(filter: DeviceFilter, bind: Bind): string {
  if ('all' in filter) return `(${filter.all.map((f) => compileFilter(f, bind)).join(' AND ')})`;
  if ('any' in filter) return `(${filter.any.map((f) => compileFilter(f, bind)).join(' OR ')})`;
  if ('not' in filter) return `(NOT coalesce(${compileFilter(filter.not, bind)}, false))`;
  const { field, key } = resolveField(filter.field) as { field: FilterField; key?: string };
  const op = operators[filter.op] as OperatorDef;
  if (field.hour && op.bound) {
    // The field's hour is at least (at most) the bound's: implied by the comparison, so the result is the same.
    const bound = op.bound(filter.value as never, bind);
    const hour = `${field.hour.column} ${bound.cmp.startsWith('>') ? '>=' : '<='} ${field.hour.of(bound.sql)}`;
    return `(${hour} AND ${field.sql(bind, key)} ${bound.cmp} ${bound.sql})`;
  }
  return `(${op.sql(field.sql(bind, key), filter.value as never, bind, field.type)})`;
}
