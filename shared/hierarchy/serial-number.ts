/**
 * Serial numbers firmware leaves as placeholders: many machines report one of these, so they identify
 * nothing and an import matching on them would join unrelated devices. Compared ignoring case and spaces.
 */
const junkSerials = new Set(
  [
    'To be filled by O.E.M.',
    'Default string',
    'System Serial Number',
    'Chassis Serial Number',
    'Not Specified',
    'Not Applicable',
    'None',
    'N/A',
    'Invalid',
    'Serial',
    'SerialNumber',
    'OEM',
    '0',
    '00000000',
    '0000000000',
    '123456789',
    '1234567890',
    'xxxxxxxxxx',
  ].map((serial) => normalized(serial)),
);

function normalized(serial: string) {
  return serial.replace(/\s+/g, '').toLowerCase();
}

/** The serial number an agent reported, or null when it is blank or a known placeholder (or only zeros). */
export function reportedSerial(serial: string | null | undefined): string | null {
  const trimmed = serial?.trim();
  if (!trimmed) return null;
  const key = normalized(trimmed);
  if (junkSerials.has(key) || /^0+$/.test(key)) return null;
  return trimmed;
}
