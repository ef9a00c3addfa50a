import { z } from 'zod';

/**
 * ISO 8601 instants as the API reads them. Each pattern is exactly what validation accepts, so the OpenAPI
 * document and the behaviour agree: a real calendar date (leap years included) from year 0001, a time with
 * seconds, and an offset within ±14:00 (the offsets time zones use); PostgreSQL reads every one of them.
 */
const date =
  '(?!0000)(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8])))';
const time = '(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?';
const offset = '(?:Z|[+-](?:(?:0\\d|1[0-3]):[0-5]\\d|14:00))';

/** With an offset (Z or ±hh:mm). */
const instantPattern = new RegExp(`^${date}T${time}${offset}$`);
/** With an offset, or without one (then UTC, and the seconds optional): what agents send. */
const agentInstantPattern = new RegExp(
  `^${date}T(?:${time}${offset}|(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d+)?)?)$`,
);
/** A list filter's bound: a date alone, or a date and time with an offset (also ±hhmm) or without one (UTC). */
export const filterInstantPattern = new RegExp(`^${date}(?:T${time}(?:Z|[+-](?:(?:0\\d|1[0-3]):?[0-5]\\d|14:?00))?)?$`);

const message =
  'Give an ISO 8601 date and time such as 2026-01-15T10:30:00Z (a year from 0001, an offset within ±14:00)';

/** An instant with an offset. */
export const instant = () => z.string().regex(instantPattern, message).meta({ format: 'date-time' });

/** An instant with an offset or, without one, in UTC. */
export const agentInstant = () => z.string().regex(agentInstantPattern, message);

/** Text of an ISO 8601 date and time that PostgreSQL reads as UTC when it names no offset. */
export const asUtc = (text: string) => (/(?:z|[+-]\d\d:?\d\d)$/i.test(text) ? text : `${text}Z`);
