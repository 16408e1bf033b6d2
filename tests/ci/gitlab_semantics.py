"""How GitLab turns a .gitlab-ci.yml with `include: local: ... inputs:` into jobs, as far as
driftgate's component needs it, modelled on GitLab's own source (gitlabhq):

- lib/gitlab/ci/config/yaml/loader.rb: a file with a `spec:` header is two YAML documents.
  With the `ci_text_interpolation` feature flag the inputs are interpolated in the text of
  the second (TextInterpolator) and the result is parsed; otherwise (`legacy_load`) the
  YAML is parsed first and interpolated node by node (Interpolation::Interpolator).
- lib/gitlab/ci/config/interpolation/config.rb (`recursive_replace`): the node walk visits
  hashes (keys and values), arrays and strings only; anything else, a `!reference` tag
  included (lib/gitlab/ci/config/yaml/tags/base.rb: a Tags::Base object, neither), is left
  as it is, `$[[ ... ]]` and all.
- lib/gitlab/ci/config/interpolation/template.rb: every `$[[ ... ]]` block in a string
  (BLOCK_REGEXP) is replaced by its value's to_s; a string that is exactly one block takes
  the value itself, with its type (a boolean input gives a boolean).
- lib/gitlab/ci/config/interpolation/inputs.rb and inputs/*.rb: defaults, `type`,
  `options`, `regex` (a string input only).
- lib/gitlab/ci/config/extendable/entry.rb: `extends` deep-merges the named bases in order
  under the job ("unknown key in `extends`" when one is missing; at most 10 levels).
- lib/gitlab/ci/config/yaml/tags/reference.rb: a `!reference [a, b]` is the value at that
  path of the whole merged configuration ("could not be found" otherwise).
- lib/gitlab/ci/config/entry/commands.rb: a script is a string or an array of strings
  nested up to 10 levels, flattened.
- lib/gitlab/ci/config/entry/variable.rb and lib/gitlab/config/entry/validators.rb
  (AlphanumericValidator): a variable's value is a string or an integer, never a boolean.
The model raises GitlabConfigError for each of these refusals; it is not a full GitLab.
"""
import copy
import re

import yaml

BLOCK = re.compile(r"(?P<block>\$\[\[\s*(?P<data>\S.*?\S)\s*\]\])")
MAX_NESTING = 10
# Top-level keys that are not jobs (doc/ci/yaml/_index.md, "Global keywords").
GLOBAL_KEYS = {"default", "include", "stages", "variables", "workflow", "image", "services", "cache",
               "before_script", "after_script", "spec", "pages"}


class GitlabConfigError(Exception):
    pass


class Reference:
    """A `!reference [a, b]` node: what Psych hands GitLab for the tag (Tags::Reference)."""

    def __init__(self, seq):
        self.seq = list(seq)

    def __eq__(self, other):
        return isinstance(other, Reference) and self.seq == other.seq

    def __repr__(self):
        return f"!reference {self.seq!r}"


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!reference", lambda loader, node: Reference(loader.construct_sequence(node)))


def _load(text, where):
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as error:
        raise GitlabConfigError(f"{where}: not YAML: {error}") from error


def split_documents(text, where):
    """The spec header and the body (Config::Yaml::Loader: at most two documents)."""
    parts = re.split(r"^---[ \t]*$\n?", text, maxsplit=2, flags=re.M)
    parts = [part for part in parts if part.strip()]
    if len(parts) == 1:
        return {}, parts[0]
    if len(parts) != 2:
        raise GitlabConfigError(f"{where}: expected a spec header and one document")
    header = _load(parts[0], where) or {}
    if "spec" not in header:
        raise GitlabConfigError(f"{where}: the first document has no spec:")
    return header["spec"] or {}, parts[1]


def resolve_inputs(spec, given, where):
    """The inputs' values: given or default, checked as Interpolation::Inputs checks them."""
    declared = (spec or {}).get("inputs") or {}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise GitlabConfigError(f"{where}: unknown input arguments: {', '.join(unknown)}")
    values = {}
    for name, rules in declared.items():
        rules = rules or {}
        if name in given:
            value = given[name]
        elif "default" in rules:
            value = rules["default"]
        else:
            raise GitlabConfigError(f"{where}: `{name}` input: required value has not been provided")
        kind = rules.get("type", "string")
        checks = {"string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
                  "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
                  "array": lambda v: isinstance(v, list)}
        if not checks[kind](value):
            raise GitlabConfigError(f"{where}: `{name}` input: provided value is not a {kind}")
        if "options" in rules and value not in rules["options"]:
            raise GitlabConfigError(f"{where}: `{name}` input: `{value}` cannot be used because it is not in the "
                                    f"list of allowed options")
        if "regex" in rules and kind == "string" and not re.search(rules["regex"], value):
            raise GitlabConfigError(f"{where}: `{name}` input: provided value does not match required RegEx pattern")
        values[name] = value
    return values


def _block_value(data, inputs, where):
    match = re.fullmatch(r"inputs\.([A-Za-z0-9_-]+)", data.strip())
    if not match:
        raise GitlabConfigError(f"{where}: unknown interpolation key or function: `{data}`")
    if match.group(1) not in inputs:
        raise GitlabConfigError(f"{where}: unknown interpolation key: `{match.group(1)}`")
    return inputs[match.group(1)]


def _to_s(value):
    """Ruby's to_s for the values an input can hold."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def interpolate_nodes(node, inputs, where):
    """The node walk of Interpolation::Config#recursive_replace with Template's replacement."""
    if isinstance(node, dict):
        return {interpolate_nodes(key, inputs, where): interpolate_nodes(value, inputs, where)
                for key, value in node.items()}
    if isinstance(node, list):
        return [interpolate_nodes(item, inputs, where) for item in node]
    if isinstance(node, str) and "$[[" in node:
        blocks = list(BLOCK.finditer(node))
        if not blocks:
            return node
        if len(blocks) == 1 and blocks[0].group("block") == node:
            return _block_value(blocks[0].group("data"), inputs, where)
        for match in blocks:
            node = node.replace(match.group("block"), _to_s(_block_value(match.group("data"), inputs, where)))
        return node
    return node  # Reference, numbers, booleans, None: left alone


def interpolate_text(body, inputs, where):
    """The ci_text_interpolation path: blocks replaced in the text, then the text parsed."""
    return _load(BLOCK.sub(lambda m: _to_s(_block_value(m.group("data"), inputs, where)), body), where)


def load_file(text, given, path, where):
    """One file as GitLab loads it, by `path` ("nodes" or "text")."""
    spec, body = split_documents(text, where)
    inputs = resolve_inputs(spec, given or {}, where)
    if path == "text":
        return interpolate_text(body, inputs, where) or {}
    return interpolate_nodes(_load(body, where) or {}, inputs, where)


def _deep_merge(into, other):
    """ActiveSupport's Hash#deep_merge: hashes merge, anything else is replaced."""
    result = dict(into)
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def load_project(files, path, components=None):
    """The configuration of a project whose files are {name: text}, from `.gitlab-ci.yml` and its
    `include: - local:` entries (and `component:` entries, read from the file `components` maps the
    component's name to), each included file loaded with its own inputs. Returns the merged hash; a
    key two includes define differently is an error (the later would override the earlier)."""
    main = load_file(files[".gitlab-ci.yml"], {}, path, ".gitlab-ci.yml")
    includes = main.pop("include", []) or []
    if isinstance(includes, (str, dict)):
        includes = [includes]
    merged, origin = {}, {}
    for index, entry in enumerate(includes):
        entry = {"local": entry} if isinstance(entry, str) else entry
        if "component" in entry:
            component = entry["component"].rsplit("/", 1)[-1].split("@")[0]
            if component not in (components or {}):
                raise GitlabConfigError(f"include {index}: unknown component `{entry['component']}`")
            name = components[component]
        else:
            name = entry["local"].lstrip("/")
        if name not in files:
            raise GitlabConfigError(f"include {index}: local file `{name}` does not exist")
        loaded = load_file(files[name], entry.get("inputs"), path, f"{name} (include {index})")
        for key, value in loaded.items():
            if key in merged and merged[key] != value and key not in GLOBAL_KEYS:
                raise GitlabConfigError(f"`{key}` is defined by include {origin[key]} and include {index} with "
                                        f"different content: one overrides the other")
            origin.setdefault(key, index)
        merged = _deep_merge(merged, loaded)
    return _deep_merge(merged, main)


def resolve_extends(config):
    """Extendable: each job with `extends` becomes its bases deep-merged in order, then itself."""
    done = {}

    def extend(key, chain):
        if key in done:
            return done[key]
        if key not in config:
            raise GitlabConfigError(f"{chain[-1]}: unknown key in `extends`: {key}")
        value = config[key]
        if not isinstance(value, dict):
            raise GitlabConfigError(f"{chain[-1] if chain else key}: invalid base hash in `extends`")
        if key in chain:
            raise GitlabConfigError(f"{key}: circular dependency detected in `extends`")
        if len(chain) > MAX_NESTING:
            raise GitlabConfigError(f"{key}: nesting too deep in `extends`")
        bases = value.get("extends", [])
        bases = [bases] if isinstance(bases, str) else bases
        result = {}
        for base in bases:
            if not isinstance(base, str):
                raise GitlabConfigError(f"{key}: `extends` names {base!r}, not a job")
            if base not in config:
                raise GitlabConfigError(f"{key}: unknown key in `extends`: {base}")
            result = _deep_merge(result, extend(base, chain + [key]))
        result = _deep_merge(result, {k: v for k, v in value.items() if k != "extends"})
        done[key] = result
        return result

    return {key: extend(key, []) if isinstance(value, dict) and key not in GLOBAL_KEYS else value
            for key, value in config.items()}


def resolve_references(config):
    """Tags::Resolver: every Reference replaced by the value at its path ("could not be found")."""

    def resolve(node, chain):
        if isinstance(node, Reference):
            if not node.seq or not all(isinstance(part, str) for part in node.seq):
                raise GitlabConfigError(f"!reference {node.seq!r} is not valid")
            if tuple(node.seq) in chain:
                raise GitlabConfigError(f"!reference {node.seq!r} is part of a circular chain")
            target = config
            for part in node.seq:
                if not isinstance(target, dict) or part not in target:
                    raise GitlabConfigError(f"!reference {node.seq!r} could not be found")
                target = target[part]
            return resolve(target, chain | {tuple(node.seq)})
        if isinstance(node, dict):
            return {key: resolve(value, chain) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item, chain) for item in node]
        return node

    return resolve(config, frozenset())


def flatten_script(value, where, depth=0):
    """Entry::Commands: a string, or strings in arrays nested up to 10 levels."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or depth >= MAX_NESTING:
        raise GitlabConfigError(f"{where}: should be a string or a nested array of strings up to 10 levels deep")
    result = []
    for item in value:
        result += flatten_script(item, where, depth + 1)
    return result


def check_variables(variables, where):
    for name, value in (variables or {}).items():
        if isinstance(value, dict):
            value = value.get("value")
            if value is None:
                continue
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise GitlabConfigError(f"{where}: variable {name} is {value!r}: variable definition must be either a "
                                    f"string or a hash")


def _leftover_blocks(node, where):
    if isinstance(node, dict):
        for key, value in node.items():
            _leftover_blocks(key, where)
            _leftover_blocks(value, f"{where}.{key}")
    elif isinstance(node, list):
        for item in node:
            _leftover_blocks(item, where)
    elif isinstance(node, str) and "$[[" in node:
        raise GitlabConfigError(f"{where}: an uninterpolated block is left: {node[:120]!r}")


def jobs_of(project_files, path, components=None):
    """The project's jobs (hidden ones dropped), after includes, extends and !reference, with
    each job's script flattened and every refusal above raised."""
    config = resolve_references(resolve_extends(load_project(project_files, path, components)))
    check_variables(config.get("variables"), "variables")
    jobs = {}
    for name, job in config.items():
        if name in GLOBAL_KEYS or name.startswith(".") or not isinstance(job, dict):
            continue
        _leftover_blocks(job, name)
        job = dict(job)
        job.pop("extends", None)
        for key in ("before_script", "script", "after_script"):
            if key in job:
                job[key] = flatten_script(job[key], f"{name}: {key} config")
        if "script" not in job and "trigger" not in job:
            raise GitlabConfigError(f"jobs {name} config should implement the script: or a trigger: keyword")
        check_variables(job.get("variables"), f"{name}: variables")
        jobs[name] = job
    for name, job in jobs.items():
        for need in job.get("needs", []) or []:
            needed = need["job"] if isinstance(need, dict) else need
            if needed not in jobs:
                raise GitlabConfigError(f"{name}: needs `{needed}`, which is not a job of this pipeline")
    return jobs
