import { useContext } from 'react';
import { ColorContext } from '../color-context.js';

/** The colour to use, or undefined when colour is off — so `<Text color={paint('red')}>` is plain then. */
export function useColor(): <C extends string>(color: C) => C | undefined {
  const on = useContext(ColorContext);
  return (color) => (on ? color : undefined);
}
