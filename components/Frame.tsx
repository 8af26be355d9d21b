import {
  createContext,
  useContext,
  useLayoutEffect,
  useRef,
  useState,
  type ReactNode,
  type RefObject,
} from 'react';
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

/** The element of the body the operator acts on; the frame scrolls to keep it in view. */
const FocusTarget = createContext<RefObject<DOMElement | null> | null>(null);

/**
 * What the operator must act on — the selected choice, a gate's field with what was typed —
 * marked so the frame scrolls to it: a selection moved below the fold, or a field under a
 * long explanation on a short terminal, is never off screen. One per screen.
 */
export function Focused({ children }: { readonly children: ReactNode }) {
  const target = useContext(FocusTarget);
  return (
    <Box ref={target ?? undefined} flexDirection="column" flexShrink={0}>
      {children}
    </Box>
  );
}

/** The element's top, in rows, inside `ancestor` (Ink lays out with yoga; offsets are per parent). */
function topWithin(element: DOMElement, ancestor: DOMElement): number | undefined {
  let top = 0;
  for (let node: DOMElement = element; node !== ancestor; node = node.parentNode) {
    if (!node.yogaNode) return undefined;
    top += node.yogaNode.getComputedTop();
    if (!node.parentNode) return undefined;
  }
  return top;
}

/**
 * A screen that never grows past the terminal: the body scrolls inside the frame (PgUp / PgDn,
 * and to follow the `Focused` element) while the header and the key hints stay. A frame as
 * tall as the terminal made Ink clear the whole screen on every key — flicker over SSH and a
 * wiped scrollback.
 *
 * The body always takes every row there is (the key hints sit on the last one), so no frame
 * ever written is taller than the terminal, whatever the body grew to since the last one.
 */
export function Frame({
  columns,
  rows,
  header,
  footer,
  children,
  headerRows = 1,
  scrollKeys = true,
}: FrameProps) {
  const content = useRef<DOMElement>(null);
  const focus = useRef<DOMElement | null>(null);
  /** Where the focused element was last seen: the frame follows it only when it moves. */
  const followed = useRef<string | undefined>(undefined);
  const space = rows === undefined ? undefined : Math.max(2, rows - CHROME - headerRows);
  const [height, setHeight] = useState<number | undefined>(undefined);
  const [offset, setOffset] = useState(0);

  const overflow = space !== undefined && height !== undefined && height > space;
  // The "more" line takes a row of its own.
  const room = space === undefined ? undefined : overflow ? space - 1 : space;
  const maxOffset = overflow ? height - room! : 0;
  const top = Math.min(offset, maxOffset);

  // Only a frame bounded by the rows needs the body's height; measuring it anyway costs an
  // extra render per frame, and the one-shot print's only frame is the one operators wait for.
  useLayoutEffect(() => {
    if (space === undefined || !content.current) return;
    const measured = measureElement(content.current).height;
    if (measured !== height) {
      setHeight(measured);
      return;
    }
    const element = focus.current;
    const at = element ? topWithin(element, content.current) : undefined;
    if (!element || at === undefined || room === undefined) {
      followed.current = undefined;
      return;
    }
    const tall = measureElement(element).height;
    const seen = `${at}:${tall}:${room}`;
    if (seen === followed.current) return;
    followed.current = seen;
    // The least scroll that shows it whole (its start, when it is taller than the room).
    let next = top;
    if (at + tall > next + room) next = at + tall - room;
    if (at < next) next = at;
    next = Math.max(0, Math.min(next, maxOffset));
    if (next !== top) setOffset(next);
  });

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
      <Box
        flexDirection="column"
        width={columns}
        {...(viewport === undefined ? {} : { height: viewport, overflow: 'hidden' as const })}
      >
        <Box ref={content} flexDirection="column" flexShrink={0} width={columns} marginTop={-top}>
          <FocusTarget.Provider value={focus}>{children}</FocusTarget.Provider>
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
