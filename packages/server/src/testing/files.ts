import { randomBytes } from 'node:crypto';
import { Document, HeadingLevel, Packer, Paragraph, Table, TableCell, TableRow } from 'docx';
import PDFDocument from 'pdfkit';
import type { CallOptions, Response, TestApp } from './harness.js';

/** Real documents made by the tests (PDF with pdfkit, DOCX with docx), and multipart uploads. */

/** A PDF with one page per entry of `pages`; `password` encrypts it. */
export function makePdf(pages: string[], options: { password?: string } = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const doc = new PDFDocument(options.password ? { userPassword: options.password } : {});
    const parts: Buffer[] = [];
    doc.on('data', (b: Buffer) => parts.push(b));
    doc.on('end', () => resolve(Buffer.concat(parts)));
    doc.on('error', reject);
    pages.forEach((text, i) => {
      if (i > 0) doc.addPage();
      doc.text(text);
    });
    doc.end();
  });
}

/** A DOCX with a heading, a paragraph, a sub-heading, a paragraph and a two-row table with a header. */
export function makeDocx(): Promise<Buffer> {
  const cell = (text: string) => new TableCell({ children: [new Paragraph(text)] });
  return Packer.toBuffer(
    new Document({
      sections: [
        {
          children: [
            new Paragraph({ text: 'Travel policy', heading: HeadingLevel.HEADING_1 }),
            new Paragraph('Employees book trains for journeys under four hours.'),
            new Paragraph({ text: 'Hotels', heading: HeadingLevel.HEADING_2 }),
            new Paragraph('Hotel stays are capped at 150 euros a night.'),
            new Table({
              rows: [
                new TableRow({ children: [cell('City'), cell('Cap')] }),
                new TableRow({ children: [cell('Paris'), cell('180')] }),
              ],
            }),
          ],
        },
      ],
    }),
  );
}

export interface FilePart {
  name: string;
  content: Buffer | string;
  type?: string;
  field?: string;
}

/** A multipart/form-data body of files and plain fields. */
export function multipartBody(
  files: FilePart[],
  fields: Record<string, string> = {},
): { payload: Buffer; contentType: string } {
  const boundary = `----engram${randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  for (const f of files) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${f.field ?? 'file'}"; filename="${f.name}"\r\nContent-Type: ${f.type ?? 'application/octet-stream'}\r\n\r\n`,
      ),
    );
    parts.push(Buffer.isBuffer(f.content) ? f.content : Buffer.from(f.content));
    parts.push(Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** POST /memory/upload with one file (or the given parts). */
export function upload(
  t: TestApp,
  file: FilePart | FilePart[],
  options: CallOptions & { fields?: Record<string, string> } = {},
): Promise<Response> {
  const { payload, contentType } = multipartBody(Array.isArray(file) ? file : [file], options.fields);
  return t.call('POST', '/memory/upload', {
    ...options,
    payload,
    headers: { 'content-type': contentType, ...options.headers },
  });
}
