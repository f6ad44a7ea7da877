/**
 * The `/mcp` screen's one form, for a new server (`n`) and for an existing
 * one (`enter`): the fields of form-state.ts, edited in place, saved by
 * ctrl+s from anywhere or enter on the last field. Nothing is sent before
 * that; a field's problem (a command line a shell would have to run) keeps
 * the form open with the problem at the field, and so does a refusal of the
 * daemon's strict save (shown at the top: its code and message, the
 * server's stderr tail when it failed to start). esc leaves without saving.
 */
import React from 'react';
import { Box, Text, usePaste } from 'ink';
import { safe } from '../client/output.ts';
import { problemOf, type ScreenApi, type Server } from './api.ts';
import { buildSave } from './form-body.ts';
import {
  fieldOfPath,
  fieldsOf,
  LABELS,
  moveFocus,
  onLastField,
  placeholder,
  rowsOf,
  setText,
  shownText,
  switchTransport,
  type FieldId,
  type FormState,
  type TextField,
  type Transport,
} from './form-state.ts';
import { editText, printable, view } from './text-input.ts';
import { COLOR, ctrl, h, Lines, resultStatus, Spinner, useKeys, useLatest, wrapLines, type Status } from './ui.ts';

const LABEL_WIDTH = 14;

export interface FormProps {
  api: ScreenApi;
  initial: FormState;
  width: number;
  height: number;
  /** Saved: the server's name, the result in words, and the server as saved (absent when nothing changed). */
  onSaved(name: string, status: Status, server?: Server): void;
  /** Left without saving. */
  onCancel(): void;
}

/** What the top of the form says about a refusal: the daemon's code and message, or for a 412 what happened in words. */
function refusal(f: FormState, code: string, message: string): string {
  if (code !== 'ALBEDO_PRECONDITION_FAILED') return `${code}: ${message}`;
  const name = f.fields.name.text.trim();
  return f.mode === 'new'
    ? `${code}: a server named ${name} exists: choose another name (or esc, then enter on it to edit it)`
    : `${code}: ${name} was changed elsewhere since this form opened: esc, then enter to edit it again`;
}

export function Form({ api, initial, width, height, onSaved, onCancel }: FormProps): React.ReactElement {
  const [f, setF, latest] = useLatest<FormState>(initial);
  const [saving, setSaving, savingNow] = useLatest(false);
  const inner = Math.max(20, width - 2);

  const save = (): void => {
    const f = latest.current;
    const built = buildSave(f);
    if ('problems' in built) {
      const first = fieldsOf(f).find((id) => built.problems[id] !== undefined) ?? f.focus;
      setF({ ...f, problems: built.problems, focus: first });
      return;
    }
    if ('unchanged' in built) return onSaved(f.current!.server.name, { tone: 'off', text: `${f.current!.server.name}: nothing changed` });
    const req = built.request;
    setSaving(true);
    const sent = req.method === 'PUT' ? api.create(req.name, req.body) : api.patch(req.name, req.body, req.etag);
    sent.then(
      (r) => onSaved(req.name, resultStatus(req.name, r), r.server),
      (err: unknown) => {
        const p = problemOf(err);
        const field = fieldOfPath(p.path, latest.current);
        const cur = latest.current;
        setSaving(false);
        setF({
          ...cur,
          error: { ...p, message: refusal(cur, p.code, p.message) },
          problems: {},
          focus: field && fieldsOf(cur).includes(field) ? field : cur.focus,
        });
      },
    );
  };

  useKeys((input, key) => {
    const f = latest.current;
    if (savingNow.current || (key.ctrl && input === 'c')) return;
    if (key.escape) return onCancel();
    if (ctrl(input, key, 's')) return save();
    if (key.tab || key.downArrow || key.upArrow) return setF(moveFocus(f, key.upArrow || (key.tab && key.shift) ? -1 : 1));
    if (key.return) return onLastField(f) ? save() : setF(moveFocus(f, 1));
    if (f.focus === 'transport') {
      if (key.leftArrow || key.rightArrow) setF(switchTransport(f));
      return;
    }
    const field = f.focus as TextField;
    const next = editText(f.fields[field], input, key);
    if (next) setF(setText(f, field, next));
  });
  usePaste((text) => {
    const f = latest.current;
    if (savingNow.current || f.focus === 'transport') return;
    const field = f.focus as TextField;
    const t = f.fields[field];
    const typed = printable(text);
    setF(setText(f, field, { text: t.text.slice(0, t.cursor) + typed + t.text.slice(t.cursor), cursor: t.cursor + typed.length }));
  });

  const title = f.mode === 'new' ? 'Add a server' : `Edit ${safe(f.current!.server.name)}`;
  // The refusal gets the rows the fields and their problems leave (the form fits the terminal: Ink redraws a taller one badly).
  const problemRows = Object.keys(f.problems).length * 2;
  const errorRows = Math.max(1, Math.min(7, height - 8 - rowsOf(f).length - problemRows));
  const refused = f.error ? h(Lines, { lines: wrapLines(`✗ ${f.error.message}`, inner, errorRows), tone: 'error' }) : null;
  return h(
    Box,
    { flexDirection: 'column', paddingX: 1 },
    h(Text, { bold: true }, title, h(Text, { dimColor: true }, '   esc leaves without saving')),
    refused ? h(Box, { flexDirection: 'column', marginTop: 1 }, refused) : null,
    h(Box, { flexDirection: 'column', marginTop: 1 }, ...rowsOf(f).map((id) => h(Row, { key: id, f, id, width: inner }))),
    h(
      Box,
      { marginTop: 1 },
      saving
        ? h(Spinner, { text: 'trying the server… (it is started and asked for its tools before anything is saved)' })
        : h(Text, null, ' '),
    ),
    h(Text, { dimColor: true, wrap: 'truncate-end' }, 'tab/↑↓ move · enter next (saves on the last) · ctrl+s save · esc cancel'),
  );
}

/** One row: the label, the field (its text around the cursor when focused, masked for a secret), its problem under it. */
function Row({ f, id, width }: { f: FormState; id: FieldId; width: number }): React.ReactElement {
  const focused = f.focus === id;
  const fieldWidth = Math.max(8, width - LABEL_WIDTH - 2);
  const label = h(
    Text,
    { color: focused ? COLOR.busy : undefined, bold: focused },
    `${focused ? '›' : ' '} ${LABELS[id].padEnd(LABEL_WIDTH - 1)}`,
  );
  let value: React.ReactElement;
  if (id === 'transport' || (id === 'name' && f.mode === 'edit')) {
    if (f.mode === 'edit')
      value = h(Text, { dimColor: true, wrap: 'truncate-end' }, `${safe(id === 'name' ? f.current!.server.name : f.transport)} (fixed)`);
    else {
      const choice = (t: Transport): React.ReactElement => {
        const on = t === f.transport;
        return h(Text, { key: t, bold: on, color: on ? COLOR.ok : undefined }, on ? `[${t}] ` : ` ${t}  `);
      };
      value = h(Text, null, choice('http'), choice('stdio'), focused ? h(Text, { dimColor: true }, ' ← → switch') : null);
    }
  } else {
    const t = f.fields[id as TextField];
    const shown = shownText(id, t.text);
    if (!t.text) {
      value = h(
        Text,
        { wrap: 'truncate-end' },
        focused ? h(Text, { inverse: true }, ' ') : null,
        h(Text, { dimColor: true }, safe(placeholder(f, id))),
      );
    } else if (focused) {
      const v = view(shown, t.cursor, fieldWidth);
      value = h(Text, null, v.before, h(Text, { inverse: true }, v.at), v.after);
    } else {
      const v = view(shown, 0, fieldWidth);
      value = h(Text, null, v.before, v.at, v.after);
    }
  }
  const problem = f.problems[id];
  return h(
    Box,
    { flexDirection: 'column' },
    h(Box, null, label, h(Box, { width: fieldWidth }, value)),
    problem
      ? h(
          Box,
          { paddingLeft: LABEL_WIDTH + 1, flexDirection: 'column' },
          h(Lines, { lines: wrapLines(`✗ ${problem}`, fieldWidth, 2), tone: 'error' }),
        )
      : null,
  );
}
