import { z } from 'zod';

/**
 * Query parameters that take a comma-separated list (`level=warn,error`): a repeated one reads as one list, as API
 * Gateway joins repeats with ','; any other repeated parameter is refused (shared/http/validate.ts).
 */
export const listParams = z.registry();

/** A change (PATCH, or a PUT of optional fields) must name at least one field; the OpenAPI document says so too. */
export const atLeastOneField = <T extends z.ZodObject>(schema: T) =>
  schema.refine((body) => Object.keys(body).length > 0, 'Give at least one field to change').meta({ minProperties: 1 });

/**
 * A whole number in a query string or path: decimal digits only (no sign, space, fraction, exponent or 0x), read
 * exactly, so `1e3`, `0x10` and `Infinity` are refused; documented as an integer within its bounds.
 */
export function decimalInteger(bounds: { min: number; max: number }) {
  return z
    .string()
    .regex(/^\d+$/, 'Give a whole number in decimal digits')
    .transform(Number)
    .pipe(z.number().min(bounds.min).max(bounds.max))
    .meta({ override: asInteger(bounds) });
}

/** Documents a decimal-digit string as the integer it stands for. */
export const asInteger =
  (bounds: { min: number; max?: number }) =>
  ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
    delete jsonSchema.pattern;
    Object.assign(jsonSchema, { type: 'integer', minimum: bounds.min });
    if (bounds.max === undefined) delete jsonSchema.maximum;
    else jsonSchema.maximum = bounds.max;
  };

/** Documents that an empty value is accepted too: as a pattern's alternative, an enum's value, or an integer's. */
function admitEmpty({ jsonSchema }: { jsonSchema: Record<string, unknown> }) {
  if (typeof jsonSchema.pattern === 'string') jsonSchema.pattern = `^$|${jsonSchema.pattern}`;
  else if (Array.isArray(jsonSchema.enum)) jsonSchema.enum = ['', ...jsonSchema.enum];
  else if (jsonSchema.type === 'integer') {
    const { description, ...integer } = jsonSchema;
    for (const key of Object.keys(jsonSchema)) delete jsonSchema[key];
    Object.assign(jsonSchema, { description, anyOf: [integer, { type: 'string', maxLength: 0 }] });
  }
}

/** An empty query parameter (`?level=`, as viewers send them) is no filter; the document admits it too. */
export const optionalParam = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional()).meta({ override: admitEmpty });

/**
 * A comma-separated list of enum values in one query parameter (`level=warn,error`), deduplicated; empty: no filter.
 * `read` turns each item into the value it stands for (a level's alias into the level).
 */
export function enumList<const T extends readonly [string, ...string[]]>(
  values: T,
  read: (item: string) => string = (item) => item,
  note = '',
) {
  const list = optionalParam(
    z
      .string()
      .transform((text) => [...new Set(text.split(',').map(read))])
      .pipe(z.array(z.enum(values))),
  ).meta({
    description: `One or more of ${values.join(', ')}, comma-separated${note}`,
    param: { style: 'form', explode: false },
    override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
      for (const key of Object.keys(jsonSchema)) if (key !== 'description') delete jsonSchema[key];
      Object.assign(jsonSchema, { type: 'array', items: { type: 'string', enum: values } });
    },
  });
  listParams.add(list);
  return list;
}

/**
 * A name as stored and compared: trimmed and in Unicode NFC, so "Café" typed precomposed or decomposed is one name
 * (unique names compare equal, and the stored text is the composed form).
 */
export const nameText = (max: number) => z.string().trim().normalize('NFC').min(1).max(max);

/** The names other log types give a level: each log type answers in its own words and reads the others' too. */
const levelAliases: Record<string, readonly string[]> = {
  warn: ['warning'],
  warning: ['warn'],
  info: ['information'],
  information: ['info'],
};

/** A level as `levels` names it: itself when it is one of them, else its alias there (`warn` → `warning`). */
export const levelIn =
  (levels: readonly string[]) =>
  (text: string): string => {
    const level = text.trim().toLowerCase();
    return levels.includes(level) ? level : (levelAliases[level]?.find((alias) => levels.includes(alias)) ?? text);
  };

const aliasNote = ' (also read: warn or warning, info or information)';

/** A filter by one or more levels of a log type, comma-separated, reading the other log types' names for them. */
export const levelList = <const T extends readonly [string, ...string[]]>(levels: T) =>
  enumList(levels, levelIn(levels), aliasNote);

/** A filter by one level of a log type, reading the other log types' names for it. */
export const levelParam = <const T extends readonly [string, ...string[]]>(levels: T) =>
  optionalParam(z.preprocess((v) => (typeof v === 'string' ? levelIn(levels)(v) : v), z.enum(levels))).meta({
    description: `One of ${levels.join(', ')}${aliasNote}`,
  });
