/**
 * How imports match names (organizations, sites, groups, fields): trimmed, in Unicode NFC and lower case, so a name
 * typed precomposed or decomposed ("Café") matches the stored one, as the unique names compare.
 */
export const nameKey = (text: string) => text.trim().normalize('NFC').toLowerCase();
