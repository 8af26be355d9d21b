import { useLayoutEffect, useRef, useState, type ReactNode } from 'react';
import { Box, Text, measureElement, type DOMElement } from 'ink';
import { useKeyStream } from './hooks/use-key-stream.js';

export interface FrameProps {
  readonly columns: number;
  /** Rows the frame may take; undefined draws the body whole (a one-shot print that exits). */
  readonly rows: number | undefined;
  /** First line(s): what screen this is. Never scrolled away. */
  readonly header: ReactNode;
  /** Last line: the key hints. Never scrolled away. */
  readonly footer: ReactNode;
  readonly children: ReactNode;
  /** Rows the header takes (the drill's rail is two). */
  readonly headerRows?: number;
  /** PgUp / PgDn scroll the body; off while another handler owns those keys. */
  readonly scrollKeys?: boolean;
}

/** Rows the footer takes, plus the one Ink keeps below a frame for the cursor. */
const CHROME = 2;

/**
 * A screen that never grows past the terminal (issue 15): the body scrolls inside the frame
 * (PgUp / PgDn) while the header and the key hints stay. A frame as tall as the terminal made
 * Ink clear the whole screen on every key — flicker over SSH and a wiped scrollback.
 *
 * The body always takes every row there is (the key hints sit on the last one), so no frame
 * ever written is taller than the terminal, whatever the body grew to since the last one.
 */
export function Frame({ columns, rows, header, footer, children, headerRows = 1, scrollKeys = true }: FrameProps) {
  const content = useRef<DOMElement>(null);
  const space = rows === undefined ? undefined : Math.max(2, rows - CHROME - headerRows);
  const [height, setHeight] = useState<number | undefined>(undefined);
  const [offset, setOffset] = useState(0);

  // Only a frame bounded by the rows needs the body's height; measuring it anyway costs an
  // extra render per frame, and the one-shot print's only frame is the one operators wait for.
  useLayoutEffect(() => {
    if (space === undefined || !content.current) return;
    const measured = measureElement(content.current).height;
    if (measured !== height) setHeight(measured);
  });

  const overflow = space !== undefined && height !== undefined && height > space;
  // The "more" line takes a row of its own.
  const room = space === undefined ? undefined : overflow ? space - 1 : space;
  const maxOffset = overflow ? height - room! : 0;
  const top = Math.min(offset, maxOffset);
  useKeyStream(
    (event) => {
      if (event.kind !== 'key') return;
      const { key } = event;
      if (key.pageDown) setOffset(Math.min(top + Math.max(1, room! - 1), maxOffset));
      if (key.pageUp) setOffset(Math.max(0, top - Math.max(1, room! - 1)));
    },
    { isActive: scrollKeys && overflow },
  );

  // Always the full room, never the last measured height: a body that just grew (a read
  // arriving) must not be drawn squeezed into the height of the one before it.
  const viewport = room;
  return (
    <Box flexDirection="column" width={columns}>
      {header}
      <Box flexDirection="column" width={columns} {...(viewport === undefined ? {} : { height: viewport, overflow: 'hidden' as const })}>
        <Box ref={content} flexDirection="column" flexShrink={0} width={columns} marginTop={-top}>
          {children}
        </Box>
      </Box>
      {overflow ? (
        <Text dimColor wrap="truncate-end">
          {`${top > 0 ? 'PgUp ↑ ' : ''}${top < maxOffset ? 'PgDn ↓ ' : ''}more (${top + 1}–${top + room!} of ${height} lines)`}
        </Text>
      ) : null}
      {footer}
    </Box>
  );
}
