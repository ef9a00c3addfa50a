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

/** A comma-separated list of enum values in one query parameter (`level=warn,error`), deduplicated; empty: no filter. */
export function enumList<const T extends readonly [string, ...string[]]>(values: T) {
  const list = optionalParam(
    z
      .string()
      .transform((text) => [...new Set(text.split(','))])
      .pipe(z.array(z.enum(values))),
  ).meta({
    description: `One or more of ${values.join(', ')}, comma-separated`,
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
