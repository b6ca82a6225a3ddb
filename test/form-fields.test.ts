import { describe, expect, it } from "vitest";
import {
  formFields,
  parseButtonName,
  parseFieldName,
  parseFormName,
  readFormFields,
} from "../src/cards/form-fields.ts";

/**
 * The card-form naming scheme, written out here by hand (not derived from the codec), so a change to the
 * names a card carries shows up as a failing expectation instead of silently moving both halves.
 */
describe("form-field codec", () => {
  it("names a form, its questions, its MCP fields and its buttons as the cards carry them", () => {
    expect(formFields.form(3)).toBe("ask3");
    expect(formFields.choice(3, 1)).toBe("ask3_q1");
    expect(formFields.custom(0, 12)).toBe("ask0_c12");
    expect(formFields.elicit(2, 4)).toBe("ask2_f4");
    expect(formFields.button(1, "submit")).toBe("ask1_submit");
    expect(formFields.button(1, "decline")).toBe("ask1_decline");
    expect(formFields.button(1, "cancel")).toBe("ask1_cancel");
  });

  it("reads back every name it writes", () => {
    for (const ask of [0, 1, 9, 10, 999])
      for (const j of [0, 5, 99]) {
        expect(parseFieldName(formFields.choice(ask, j))).toEqual({
          askIndex: ask,
          kind: "choice",
          index: j,
        });
        expect(parseFieldName(formFields.custom(ask, j))).toEqual({
          askIndex: ask,
          kind: "custom",
          index: j,
        });
        expect(parseFieldName(formFields.elicit(ask, j))).toEqual({
          askIndex: ask,
          kind: "elicit",
          index: j,
        });
      }
    expect(parseFormName(formFields.form(7))).toBe(7);
    expect(parseButtonName(formFields.button(4, "decline"))).toEqual({ askIndex: 4, act: "decline" });
  });

  it("refuses names it never writes: leading zeros, too many digits, other letters, other shapes", () => {
    for (const name of [
      "ask01_q0",
      "ask0_q01",
      "ask1000_q0",
      "ask0_q100",
      "ask0_x0",
      "ask_q0",
      "q0",
      "",
      "ASK0_q0",
    ])
      expect(parseFieldName(name), name).toBeUndefined();
    for (const name of ["ask01", "ask", "ask0_submit", "ask-1", 7, null, undefined])
      expect(parseFormName(name), String(name)).toBeUndefined();
    for (const name of ["ask0_approve", "ask01_submit", "ask0_q0", "submit", 3, undefined])
      expect(parseButtonName(name), String(name)).toBeUndefined();
  });

  it("sorts one form's fields out of a form_value, and any form's when no form is named", () => {
    const formValue = { ask1_q0: "2", ask1_c0: "自己写", ask1_f3: ["0"], ask0_q0: "1", other: "x" };
    const one = readFormFields(formValue, 1);
    expect([...one.choice]).toEqual([[0, "2"]]);
    expect([...one.custom]).toEqual([[0, "自己写"]]);
    expect([...one.elicit]).toEqual([[3, ["0"]]]);
    const none = readFormFields(formValue, null);
    expect(none.choice.size + none.custom.size + none.elicit.size).toBe(0);
    expect(readFormFields({ ask4_q1: "0" }, undefined).choice.get(1)).toBe("0");
    for (const junk of [null, "ask0_q0", ["0"], 5])
      expect(readFormFields(junk, undefined).choice.size, JSON.stringify(junk)).toBe(0);
  });
});
