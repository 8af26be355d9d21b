import { createContext } from 'react';

/**
 * Whether colour is on (off for NO_COLOR, TERM=dumb, --no-color). A context rather than a
 * prop on every Text: meaning is always carried by words and marks, colour only laid on top.
 */
export const ColorContext = createContext<boolean>(true);
