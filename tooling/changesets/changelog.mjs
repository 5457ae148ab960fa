// The changelog lines `changeset version` writes (.changeset/config.json names this file): the
// default ones (@changesets/cli/changelog), except that a dependency's first release is not listed
// as an update. At a package's first release its dependencies are released for the first time too;
// "Updated dependencies @flotilla/core@0.1.0" would tell a reader of that first changelog about a
// change from a version that never existed.
import base from "@changesets/cli/changelog";

/** The version of a workspace package that was never released. */
export const UNRELEASED = "0.0.0";

export default {
  getReleaseLine: (changeset, type, options) => base.getReleaseLine(changeset, type, options),
  getDependencyReleaseLine: async (changesets, dependenciesUpdated, options) => {
    const updated = dependenciesUpdated.filter((dependency) => dependency.oldVersion !== UNRELEASED);
    if (updated.length === 0) return "";
    // One line per changeset that moved these dependencies, not one per changeset named anywhere.
    const moved = new Set(updated.flatMap((dependency) => dependency.changesets));
    const line = await base.getDependencyReleaseLine(
      changesets.filter((changeset) => moved.has(changeset.id)),
      updated,
      options,
    );
    return [...new Set(line.split("\n"))].join("\n");
  },
};
