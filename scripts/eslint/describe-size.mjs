// max-lines-per-function, except a describe() callback: a container of tests, each of them a
// function held to the limit, whose length is the count of its tests and not logic to read at once.
import { builtinRules } from 'eslint/use-at-your-own-risk';

const core = builtinRules.get('max-lines-per-function');

/** A function passed to describe(), describe.skip() or describe.only(). */
function isDescribeCallback(node) {
  const call = node.parent;
  if (call?.type !== 'CallExpression' || !call.arguments.includes(node)) return false;
  const callee = call.callee.type === 'MemberExpression' ? call.callee.object : call.callee;
  return callee.type === 'Identifier' && callee.name === 'describe';
}

export default {
  meta: { ...core.meta, docs: { description: 'max-lines-per-function, describe() callbacks left out' } },
  create(context) {
    const report = (descriptor) => {
      if (!isDescribeCallback(descriptor.node)) context.report(descriptor);
    };
    return core.create(Object.create(context, { report: { value: report } }));
  },
};
