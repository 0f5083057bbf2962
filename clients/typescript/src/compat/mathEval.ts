/**
 * `mathEval`: an arithmetic expression's value, read by a parser of its own, never by
 * eval() or Function(): nothing but numbers, `+ - * / % ^`, parentheses, the constants
 * `pi` and `e`, and the functions of FUNCTIONS can run. As mathjs evaluates them: `^`
 * binds tighter than a sign (`-2^2` is -4) and to the right (`2^3^2` is 512); `1/0` is
 * Infinity. An expression it cannot read throws an InvalidExpression saying where and why.
 */

/** The expression cannot be read: `message` quotes it and says where it went wrong. */
export class InvalidExpression extends Error {
  // The name errord reads as the call's value that did not parse (INVALID_INPUT: the model
  // can correct it), as it reads a Python tool's ValueError.
  override readonly name = "ValueError";
}

const FUNCTIONS: Readonly<Record<string, { arity: [number, number]; apply: (...args: number[]) => number }>> = {
  abs: { arity: [1, 1], apply: Math.abs },
  sqrt: { arity: [1, 1], apply: Math.sqrt },
  cbrt: { arity: [1, 1], apply: Math.cbrt },
  exp: { arity: [1, 1], apply: Math.exp },
  log: { arity: [1, 2], apply: (x, base) => (base === undefined ? Math.log(x) : Math.log(x) / Math.log(base)) },
  log10: { arity: [1, 1], apply: Math.log10 },
  log2: { arity: [1, 1], apply: Math.log2 },
  sin: { arity: [1, 1], apply: Math.sin },
  cos: { arity: [1, 1], apply: Math.cos },
  tan: { arity: [1, 1], apply: Math.tan },
  asin: { arity: [1, 1], apply: Math.asin },
  acos: { arity: [1, 1], apply: Math.acos },
  atan: { arity: [1, 1], apply: Math.atan },
  floor: { arity: [1, 1], apply: Math.floor },
  ceil: { arity: [1, 1], apply: Math.ceil },
  round: { arity: [1, 1], apply: Math.round },
  pow: { arity: [2, 2], apply: Math.pow },
  min: { arity: [1, 64], apply: Math.min },
  max: { arity: [1, 64], apply: Math.max },
};

const CONSTANTS: Readonly<Record<string, number>> = { pi: Math.PI, PI: Math.PI, e: Math.E, E: Math.E };

/** The longest expression read (longer ones are refused before parsing). */
const MAX_LENGTH = 1000;

/** The value of `expression` (see the module's comment). */
export function mathEval(expression: string): number {
  if (typeof expression !== "string") throw new InvalidExpression(`the expression should be a string, got ${typeof expression}`);
  if (expression.length > MAX_LENGTH) throw new InvalidExpression(`the expression is longer than ${MAX_LENGTH} characters`);
  return new Parser(expression).parse();
}

type Token = { kind: "number"; value: number; at: number } | { kind: "name" | "symbol"; text: string; at: number };

function tokens(expression: string): Token[] {
  const found: Token[] = [];
  const pattern = /\s*(?:(\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|([A-Za-z_]\w*)|([-+*/%^(),]))/y;
  let at = 0;
  while (at < expression.length) {
    if (/^\s*$/.test(expression.slice(at))) break;
    pattern.lastIndex = at;
    const match = pattern.exec(expression);
    if (match === null) {
      const position = at + (/^\s*/.exec(expression.slice(at))?.[0].length ?? 0);
      throw new InvalidExpression(`Invalid expression ${JSON.stringify(expression)}: unexpected ${JSON.stringify(expression[position])} at position ${position + 1}`);
    }
    const start = pattern.lastIndex - (match[1] ?? match[2] ?? match[3] ?? "").length;
    if (match[1] !== undefined) found.push({ kind: "number", value: Number(match[1]), at: start });
    else if (match[2] !== undefined) found.push({ kind: "name", text: match[2], at: start });
    else found.push({ kind: "symbol", text: match[3] ?? "", at: start });
    at = pattern.lastIndex;
  }
  return found;
}

class Parser {
  private readonly tokens: Token[];
  private next = 0;

  constructor(private readonly expression: string) {
    this.tokens = tokens(expression);
  }

  parse(): number {
    if (this.tokens.length === 0) throw new InvalidExpression("Invalid expression: it is empty");
    const value = this.sum();
    const left = this.tokens[this.next];
    if (left !== undefined) this.fail(left, "expected an operator");
    return value;
  }

  private sum(): number {
    let value = this.product();
    for (let op = this.symbol("+", "-"); op; op = this.symbol("+", "-")) {
      const right = this.product();
      value = op === "+" ? value + right : value - right;
    }
    return value;
  }

  private product(): number {
    let value = this.signed();
    for (let op = this.symbol("*", "/", "%"); op; op = this.symbol("*", "/", "%")) {
      const right = this.signed();
      value = op === "*" ? value * right : op === "/" ? value / right : value % right;
    }
    return value;
  }

  private signed(): number {
    const sign = this.symbol("+", "-");
    if (sign) return sign === "-" ? -this.signed() : this.signed();
    return this.power();
  }

  private power(): number {
    const base = this.primary();
    return this.symbol("^") ? base ** this.signed() : base;
  }

  private primary(): number {
    const token = this.tokens[this.next++];
    if (token === undefined) throw new InvalidExpression(`Invalid expression ${JSON.stringify(this.expression)}: unexpected end of expression`);
    if (token.kind === "number") return token.value;
    if (token.kind === "symbol" && token.text === "(") {
      const value = this.sum();
      this.expect(")");
      return value;
    }
    if (token.kind === "name") {
      const fn = FUNCTIONS[token.text];
      if (fn !== undefined && Object.hasOwn(FUNCTIONS, token.text)) return this.call(token.text, fn);
      if (Object.hasOwn(CONSTANTS, token.text)) return CONSTANTS[token.text] as number;
      throw new InvalidExpression(`Invalid expression ${JSON.stringify(this.expression)}: undefined symbol ${token.text} at position ${token.at + 1}`);
    }
    return this.fail(token, "expected a number");
  }

  private call(name: string, fn: { arity: [number, number]; apply: (...args: number[]) => number }): number {
    this.expect("(");
    const args = [this.sum()];
    while (this.symbol(",")) args.push(this.sum());
    this.expect(")");
    const [least, most] = fn.arity;
    if (args.length < least || args.length > most) {
      const wanted = least === most ? `${least}` : `${least} to ${most}`;
      throw new InvalidExpression(`Invalid expression ${JSON.stringify(this.expression)}: ${name} takes ${wanted} argument${most === 1 ? "" : "s"}, got ${args.length}`);
    }
    return fn.apply(...args);
  }

  /** The next token's symbol and past it, when it is one of `symbols`. */
  private symbol(...symbols: string[]): string | undefined {
    const token = this.tokens[this.next];
    if (token?.kind !== "symbol" || !symbols.includes(token.text)) return undefined;
    this.next += 1;
    return token.text;
  }

  private expect(symbol: string): void {
    if (this.symbol(symbol)) return;
    const token = this.tokens[this.next];
    if (token === undefined) throw new InvalidExpression(`Invalid expression ${JSON.stringify(this.expression)}: expected "${symbol}" at the end`);
    this.fail(token, `expected "${symbol}"`);
  }

  private fail(token: Token, expected: string): never {
    const shown = token.kind === "number" ? String(token.value) : token.text;
    throw new InvalidExpression(`Invalid expression ${JSON.stringify(this.expression)}: ${expected}, got ${JSON.stringify(shown)} at position ${token.at + 1}`);
  }
}
