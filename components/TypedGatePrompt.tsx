import { GateField } from './GateField.js';
import { MARKS } from '../src/app/marks.js';
import { useColor } from './hooks/use-color.js';
import { Focused } from './Frame.js';
import { Prose } from './Prose.js';

export interface TypedGatePromptProps {
  /** Which fingerprint's 8 characters unlock it: the one marked "type these" on the screen. */
  readonly side: 'LOCAL' | 'PUBLISHED';
  /** The button's name, and what Enter does once it is enabled. */
  readonly button: string;
  readonly enabled: string;
  readonly typed: string;
  readonly refusal: string | undefined;
  readonly unlocked: boolean;
  readonly columns: number;
  readonly onTyped: (text: string) => void;
  readonly onConfirm: () => void;
  readonly isActive: boolean;
}

/**
 * The field of a typed gate (force, push over), focused right under the marks it asks for, so
 * both stay in view on a short terminal; one piece of code, so every gate asks, refuses and
 * says "nothing written yet" in the same words.
 */
export function TypedGatePrompt(props: TypedGatePromptProps) {
  const paint = useColor();
  const { columns, button } = props;
  return (
    <Focused>
      <Prose
        width={columns}
        text={`Type the 8 characters marked "type these" (${props.side}, after SHA256:), then Enter:`}
      />
      <GateField
        value={props.typed}
        onChange={props.onTyped}
        onSubmit={props.onConfirm}
        isActive={props.isActive}
        refusal={props.refusal}
        columns={columns}
      />
      {props.unlocked ? (
        <Prose
          width={columns}
          bold
          color={paint(MARKS.action.color)}
          text={`[ ${button} ] enabled: Enter ${props.enabled}`}
        />
      ) : (
        <Prose
          width={columns}
          text={`[ ${button} ] disabled until the 8 characters match · nothing written yet`}
        />
      )}
    </Focused>
  );
}
