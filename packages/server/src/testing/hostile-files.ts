import { constants, crc32, deflateRawSync } from 'node:zlib';

/**
 * Files built to hurt a parser, made on the spot (no binary fixtures): the tests of the reading
 * limits (modules/ingest/hostile.test.ts) and the hostile-upload fault scenario (bench/faults/) use them.
 */

/**
 * Raw deflate data that inflates to `repeats` copies of `unit` from few bytes: the unit compressed
 * once into non-final blocks ending on a byte boundary (a sync flush), repeated, then a final empty block.
 */
function deflateRepeated(unit: Buffer, repeats: number): Buffer {
  const block = deflateRawSync(unit, { level: 9, finishFlush: constants.Z_SYNC_FLUSH });
  return Buffer.concat([...Array.from({ length: repeats }, () => block), Buffer.from([0x03, 0x00])]);
}

/** The same data with a zlib header (as a PDF's Flate stream has it); the checksum is left wrong, as a bomb's may be. */
const zlibRepeated = (unit: Buffer, repeats: number) =>
  Buffer.concat([Buffer.from([0x78, 0xda]), deflateRepeated(unit, repeats), Buffer.alloc(4)]);

/** A zip of the given entries, deflated (or stored, when `stored`). */
function zip(entries: Array<{ name: string; data: Buffer; size: number; crc: number; stored?: boolean }>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(e.stored ? 0 : 8, 8);
    local.writeUInt32LE(e.crc >>> 0, 14);
    local.writeUInt32LE(e.data.length, 18);
    local.writeUInt32LE(e.size >>> 0, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(e.stored ? 0 : 8, 10);
    central.writeUInt32LE(e.crc >>> 0, 16);
    central.writeUInt32LE(e.data.length, 20);
    central.writeUInt32LE(e.size >>> 0, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, e.data);
    centrals.push(central, name);
    offset += 30 + name.length + e.data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const deflated = (name: string, text: string) => {
  const data = Buffer.from(text);
  return { name, data: deflateRawSync(data), size: data.length, crc: crc32(data) };
};

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';
const RELS =
  '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>';

/**
 * A DOCX whose document.xml inflates to about `expandedMb` MB of paragraphs from a file of a
 * thousandth of that: the zip bomb that raised the server's memory to 2.2 GB (issue 46, defect 6).
 */
export function docxBomb(expandedMb = 1024): Buffer {
  const paragraph = '<w:p><w:r><w:t>All work and no play makes a dull boy.</w:t></w:r></w:p>';
  // Whole paragraphs, so that the document stays well-formed and a parser reads all of it.
  const unit = Buffer.from(paragraph.repeat(Math.floor((1024 * 1024) / paragraph.length)));
  const head = Buffer.from(
    '<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>',
  );
  const tail = Buffer.from('</w:body></w:document>');
  const body = deflateRepeated(unit, expandedMb).subarray(0, -2);
  return zip([
    deflated('[Content_Types].xml', CONTENT_TYPES),
    deflated('_rels/.rels', RELS),
    // The header, the repeated body and the tail as one deflate stream; its size declared as it is
    // (JSZip trusts it), its checksum left wrong (JSZip does not check it by default).
    {
      name: 'word/document.xml',
      data: Buffer.concat([deflateRawSync(head, { finishFlush: constants.Z_SYNC_FLUSH }), body, deflateRawSync(tail)]),
      size: Math.min(0xffffffff, head.length + unit.length * expandedMb + tail.length),
      crc: 0,
    },
  ]);
}

/** A valid small DOCX whose zip holds `entries` entries besides its document: past the parts limit. */
export function docxOfManyParts(entries: number): Buffer {
  const document =
    '<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Hello.</w:t></w:r></w:p></w:body></w:document>';
  return zip([
    deflated('[Content_Types].xml', CONTENT_TYPES),
    deflated('_rels/.rels', RELS),
    deflated('word/document.xml', document),
    ...Array.from({ length: entries }, (_, i) => ({
      name: `customXml/item${i}.xml`,
      data: Buffer.alloc(0),
      size: 0,
      crc: 0,
      stored: true,
    })),
  ]);
}

/** A PDF of the given objects (numbered from 1, object 1 the catalog), with a correct cross-reference table. */
function pdf(objects: Array<string | Buffer>): Buffer {
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  let length = parts[0]!.length;
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(length);
    const part = Buffer.concat([
      Buffer.from(`${i + 1} 0 obj\n`),
      Buffer.isBuffer(body) ? body : Buffer.from(body, 'latin1'),
      Buffer.from('\nendobj\n'),
    ]);
    parts.push(part);
    length += part.length;
  });
  const xref = `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  parts.push(
    Buffer.from(`${xref}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`),
  );
  return Buffer.concat(parts);
}

const FONT = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
const stream = (dictionary: string, data: Buffer) =>
  Buffer.concat([
    Buffer.from(`<< ${dictionary} /Length ${data.length} >>\nstream\n`),
    data,
    Buffer.from('\nendstream'),
  ]);

/** One page whose content stream is `content`, Flate-compressed as given. */
const onePage = (content: Buffer) =>
  pdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    stream('/Filter /FlateDecode', content),
    FONT,
  ]);

/** A PDF whose one content stream inflates to about `expandedMb` MB (the 1 MB flate bomb that ran the server out of heap). */
export const pdfFlateBomb = (expandedMb = 1024): Buffer =>
  onePage(zlibRepeated(Buffer.alloc(1024 * 1024, 0x20), expandedMb));

/**
 * A PDF whose content stream inflates to about `expandedMb` MB of text-showing operators: within
 * the expansion bound, but minutes of work for a parser (the file that takes forever).
 */
export const pdfSlowText = (expandedMb = 200): Buffer => {
  const ops = Buffer.from('BT /F1 9 Tf 10 700 Td (slow) Tj ET\n'.repeat(40_000).slice(0, 1024 * 1024));
  return onePage(zlibRepeated(ops, expandedMb));
};

/** A small PDF whose page tree claims `pages` pages (it holds one). */
export const pdfClaimingPages = (pages: number): Buffer =>
  pdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [3 0 R] /Count ${pages} >>`,
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    stream('', Buffer.from('BT /F1 12 Tf 72 700 Td (One real page.) Tj ET')),
    FONT,
  ]);

/** A PDF of `pages` real pages sharing one content stream (the 15,000-page PDF of issue 46). */
export const pdfOfPages = (pages: number): Buffer =>
  pdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${Array.from({ length: pages }, (_, i) => `${i + 5} 0 R`).join(' ')}] /Count ${pages} >>`,
    stream('', Buffer.from('BT /F1 12 Tf 72 700 Td (A page among many.) Tj ET')),
    FONT,
    ...Array.from(
      { length: pages },
      () =>
        '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources << /Font << /F1 4 0 R >> >> >>',
    ),
  ]);

/** HTML nested `depth` elements deep around one sentence. */
export const deepHtml = (depth: number): string =>
  `<!doctype html><html><body>${'<div>'.repeat(depth)}<p>Deep inside.</p>${'</div>'.repeat(depth)}</body></html>`;

/** HTML of `paragraphs` short paragraphs: past the parts limit. */
export const wideHtml = (paragraphs: number): string =>
  `<!doctype html><html><body>${Array.from({ length: paragraphs }, (_, i) => `<p>Paragraph ${i} of a very long page.</p>`).join('')}</body></html>`;

/** JSON nested `depth` arrays deep. */
export const deepJson = (depth: number): string => `${'{"a":'.repeat(depth)}"deep"${'}'.repeat(depth)}`;
