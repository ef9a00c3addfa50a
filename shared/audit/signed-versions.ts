/**
 * The version tags of what the integrity watch and the retention worker sign; plain values, so the reply schemas
 * (and the viewer, which compiles them for the browser) name them without loading the signing code.
 */
export const anchorVersion = 'logbook-anchor-v1';
export const checkpointVersion = 'logbook-checkpoint-v1';
