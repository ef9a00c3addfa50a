/**
 * E-mail out: Amazon SES in AWS (the verified sender NOTIFICATION_EMAIL_FROM), and locally each message written as an
 * `.eml` file under MAIL_DIR (default `.data/mail/`) for a developer or a test to read. The one adapter of the SES
 * client (each AWS SDK client has one module).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SESv2Client } from '@aws-sdk/client-sesv2';

type Sdk = typeof import('@aws-sdk/client-sesv2');
let sdk: Promise<Sdk> | undefined;
let client: SESv2Client | undefined;

/** The sender: NOTIFICATION_EMAIL_FROM (in AWS an SES-verified address or domain). */
const sender = () => process.env.NOTIFICATION_EMAIL_FROM || (inLambda() ? '' : 'logbook@localhost');
const inLambda = () => Boolean(process.env.AWS_LAMBDA_FUNCTION_NAME);
export const mailDirectory = () => process.env.MAIL_DIR || join('.data', 'mail');

/** A header value: ASCII as it is, anything else as an RFC 2047 encoded word. */
function headerText(text: string): string {
  const flat = text.replace(/[\r\n]+/g, ' ');
  return /^[\x20-\x7e]*$/.test(flat) ? flat : `=?UTF-8?B?${Buffer.from(flat, 'utf8').toString('base64')}?=`;
}

/** The message as RFC 5322 text (UTF-8, 8bit). */
export function mimeMessage(mail: { id: string; to: string[]; subject: string; text: string; date: Date }): string {
  const from = sender();
  return [
    `From: Logbook <${from}>`,
    `To: ${mail.to.join(', ')}`,
    `Subject: ${headerText(mail.subject)}`,
    `Date: ${mail.date.toUTCString()}`,
    `Message-ID: <${mail.id}@${from.split('@')[1] || 'logbook'}>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    mail.text.replace(/\r?\n/g, '\r\n'),
    '',
  ].join('\r\n');
}

/** Sends one message: through SES inside Lambda, else written as `<id>.eml` into the mail directory. */
export async function sendMail(mail: { id: string; to: string[]; subject: string; text: string; date: Date }) {
  if (!inLambda()) {
    await mkdir(mailDirectory(), { recursive: true });
    await writeFile(join(mailDirectory(), `${mail.id}.eml`), mimeMessage(mail));
    return;
  }
  if (!sender()) throw new Error('NOTIFICATION_EMAIL_FROM (a verified SES sender) is not set');
  sdk ??= import('@aws-sdk/client-sesv2');
  const loaded = await sdk;
  client ??= new loaded.SESv2Client({});
  await client.send(
    new loaded.SendEmailCommand({
      FromEmailAddress: sender(),
      Destination: { ToAddresses: mail.to },
      Content: { Raw: { Data: Buffer.from(mimeMessage(mail)) } },
    }),
  );
}
