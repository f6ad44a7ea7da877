/// <reference lib="dom" />
// Preact, its hooks and htm in one ES module, which the daemon serves at
// /ui/vendor/preact-htm.js from node_modules/htm/preact/standalone.module.js
// (daemon/ui-static.ts): no build step, no network beyond the daemon. The
// path exists only as the daemon serves it, so tsc is told the module's
// types from the package instead.

// @ts-ignore: served by the daemon, not a file of web/
import * as standalone from '../vendor/preact-htm.js';

/** @type {typeof import('htm/preact/standalone')} */
const P = standalone;

export const { html, render, useState, useEffect, useRef, useCallback, useMemo } = P;
