"""What the stack knows about objects: categories, their parts, and what each part affords.

This is the single source of semantic knowledge. The procedural asset library labels its
geometry with these part names, the task parser resolves words to them, and the grounding
sources look regions up by them. A new object category is added here first
(see docs/adding_an_object.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Affordance vocabulary over parts (what touching or using a part achieves).
AFFORDANCES: tuple[str, ...] = (
    "grasp_handle",  # hold a tool or container by its handle
    "grasp_body",  # hold an object by its main body
    "pour_out",  # liquid leaves through here
    "pour_in",  # liquid or items enter through here
    "hang",  # a ring or hook that hangs on a peg
    "contain",  # holds things inside
    "support",  # things rest on it
    "press",  # a knob or button
    "pull",  # pulled to open
)


@dataclass(frozen=True)
class Category:
    """One object category.

    Attributes:
        name: Canonical category name, snake_case (``"paper_cup"``).
        parts: Part names in label order; label ``i`` of an asset's cloud is ``parts[i]``.
        affordances: For each part, the affordances it offers.
        default_grasp: Part grasped when a task names the object but no region.
        synonyms: Words a person uses for the category (the canonical name included).
        part_synonyms: Extra words for parts of this category (beyond ``PART_SYNONYMS``).
        articulated: True for furniture with joints (drawers, doors).
        fixed: True when the object is fixed to the world (furniture, racks), not free.
        elongated: True for objects that are grasped across their long axis (tools, bananas).
    """

    name: str
    parts: tuple[str, ...]
    affordances: dict[str, tuple[str, ...]]
    default_grasp: str
    synonyms: tuple[str, ...] = ()
    part_synonyms: dict[str, tuple[str, ...]] = field(default_factory=dict)
    articulated: bool = False
    fixed: bool = False
    elongated: bool = False

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError(f"category {self.name!r} has no parts")
        if self.default_grasp not in self.parts:
            raise ValueError(f"{self.name}: default_grasp {self.default_grasp!r} not in {self.parts}")
        unknown = set(self.affordances) - set(self.parts)
        if unknown:
            raise ValueError(f"{self.name}: affordances name unknown parts {sorted(unknown)}")
        for part, affs in self.affordances.items():
            bad = set(affs) - set(AFFORDANCES)
            if bad:
                raise ValueError(f"{self.name}.{part}: unknown affordances {sorted(bad)}")

    def parts_with(self, affordance: str) -> tuple[str, ...]:
        """Parts of this category that offer ``affordance``, in label order."""
        return tuple(p for p in self.parts if affordance in self.affordances.get(p, ()))


def _c(
    name: str, parts: tuple[str, ...], aff: dict[str, tuple[str, ...]], default: str, **kw: object
) -> Category:
    return Category(name=name, parts=parts, affordances=aff, default_grasp=default, **kw)  # type: ignore[arg-type]


CATEGORIES: dict[str, Category] = {
    c.name: c
    for c in (
        _c(
            "mug",
            ("body", "handle", "rim"),
            {
                "body": ("grasp_body", "contain"),
                "handle": ("grasp_handle", "hang"),
                "rim": ("pour_in", "pour_out"),
            },
            "handle",
            synonyms=("mug", "cup", "coffee mug", "mugcup"),
        ),
        _c(
            "paper_cup",
            ("body", "rim"),
            {"body": ("grasp_body", "contain"), "rim": ("pour_in", "pour_out")},
            "body",
            synonyms=("paper cup", "papercup", "disposable cup"),
        ),
        _c(
            "bowl",
            ("body", "rim"),
            {"body": ("grasp_body", "contain"), "rim": ("pour_in", "pour_out")},
            "rim",
            synonyms=("bowl",),
        ),
        _c(
            "plate",
            ("body", "rim"),
            {"body": ("support",), "rim": ("grasp_body",)},
            "rim",
            synonyms=("plate", "dish"),
        ),
        _c(
            "hammer",
            ("head", "handle"),
            {"head": ("press",), "handle": ("grasp_handle",)},
            "handle",
            synonyms=("hammer", "mallet"),
            elongated=True,
        ),
        _c(
            "kettle",
            ("body", "handle", "spout", "lid"),
            {
                "body": ("grasp_body", "contain"),
                "handle": ("grasp_handle",),
                "spout": ("pour_out",),
                "lid": ("press",),
            },
            "handle",
            synonyms=("kettle", "teapot", "watering can"),
        ),
        _c(
            "pot",
            ("body", "handle", "lid", "knob"),
            {
                "body": ("contain", "grasp_body"),
                "handle": ("grasp_handle",),
                "lid": ("support",),
                "knob": ("press", "grasp_handle"),
            },
            "handle",
            synonyms=("pot", "saucepan", "cooking pot", "stockpot"),
        ),
        _c(
            "pan",
            ("body", "handle"),
            {"body": ("contain", "support"), "handle": ("grasp_handle",)},
            "handle",
            synonyms=("pan", "frying pan", "skillet"),
            elongated=True,
        ),
        _c(
            "scoop",
            ("bowl", "handle"),
            {"bowl": ("contain", "pour_out"), "handle": ("grasp_handle",)},
            "handle",
            synonyms=("scoop", "ladle", "spoon"),
            elongated=True,
        ),
        _c(
            "bottle",
            ("body", "cap"),
            {"body": ("grasp_body", "contain"), "cap": ("press", "pour_out")},
            "body",
            synonyms=("bottle", "water bottle"),
        ),
        _c(
            "banana",
            ("body",),
            {"body": ("grasp_body",)},
            "body",
            synonyms=("banana", "fruit"),
            elongated=True,
        ),
        _c(
            "box",
            ("body",),
            {"body": ("grasp_body",)},
            "body",
            synonyms=("box", "package", "carton"),
        ),
        _c("cube", ("body",), {"body": ("grasp_body",)}, "body", synonyms=("cube", "block")),
        # Leaves afford nothing: a tuft or a floppy leaf end gives no hold a gripper can trust,
        # and nothing is placed on, poured from or pressed on it. "By the leaves" still parses
        # (an explicit grasp is honoured), but no default or fallback grasp lands there.
        _c(
            "carrot",
            ("body", "leaves"),
            {"body": ("grasp_body",), "leaves": ()},
            "body",
            synonyms=("carrot",),
            part_synonyms={"body": ("root",)},
            elongated=True,
        ),
        _c(
            "leek",
            ("stalk", "leaves"),
            {"stalk": ("grasp_body",), "leaves": ()},
            "stalk",
            synonyms=("leek",),
            part_synonyms={"stalk": ("white part", "shank")},
            elongated=True,
        ),
        _c(
            "pen",
            ("body", "cap"),
            {"body": ("grasp_body",), "cap": ("press",)},
            "body",
            synonyms=("pen", "ballpoint", "ballpoint pen", "biro", "marker"),
            part_synonyms={"body": ("barrel",)},
            elongated=True,
        ),
        # A sealed can contains its soup as a bottle its water ("contain" as for the bottle);
        # nothing is put into it, so the asset is solid and not among the tests' hollow ones.
        _c(
            "soup_can",
            ("body", "lid"),
            {"body": ("grasp_body", "contain"), "lid": ("press",)},
            "body",
            synonyms=("soup can", "soupcan", "can", "tin can"),
        ),
        # The lid is the flat top of a closed carton: small things are set on it.
        _c(
            "chocolate_box",
            ("body", "lid"),
            {"body": ("grasp_body",), "lid": ("support",)},
            "body",
            synonyms=("chocolate box", "chocolatebox", "box of chocolates", "candy box"),
        ),
        _c(
            "sugar_box",
            ("body", "top"),
            {"body": ("grasp_body",), "top": ("support",)},
            "body",
            synonyms=("sugar box", "sugarbox", "box of sugar"),
            part_synonyms={"top": ("top face", "top side", "upper face")},
        ),
        _c(
            "cutting_board",
            ("board", "handle"),
            {"board": ("support",), "handle": ("grasp_handle",)},
            "handle",
            synonyms=("cutting board", "cuttingboard", "chopping board", "board"),
        ),
        _c(
            "rack",
            ("base", "pole", "hook"),
            {"base": ("support",), "pole": ("support",), "hook": ("hang",)},
            "pole",
            synonyms=("rack", "mug rack", "mug tree", "hook", "stand"),
            fixed=True,
        ),
        _c(
            "shelf",
            ("board", "frame"),
            {"board": ("support",), "frame": ("support",)},
            "board",
            synonyms=("shelf", "shelves"),
            fixed=True,
        ),
        _c(
            "tray", ("base", "rim"), {"base": ("support",), "rim": ("grasp_body",)}, "rim", synonyms=("tray",)
        ),
        _c(
            "cabinet",
            ("body", "drawer", "drawer_handle", "door", "door_handle"),
            {
                "body": ("support", "contain"),
                "drawer": ("contain",),
                "drawer_handle": ("pull",),
                "door": ("contain",),
                "door_handle": ("pull",),
            },
            "drawer_handle",
            synonyms=("cabinet", "cupboard", "drawer", "dresser"),
            articulated=True,
            fixed=True,
        ),
        _c(
            "microwave",
            ("body", "door", "door_handle"),
            {"body": ("contain",), "door": ("contain",), "door_handle": ("pull",)},
            "door_handle",
            synonyms=("microwave", "microwave oven", "oven"),
            articulated=True,
            fixed=True,
        ),
    )
}

# Words for parts shared across categories.
PART_SYNONYMS: dict[str, tuple[str, ...]] = {
    "handle": ("handle", "grip", "handgrip", "shaft", "stem", "where you hold it"),
    "body": ("body", "side", "outside", "wall", "middle"),
    "rim": ("rim", "edge", "lip", "opening", "mouth", "top edge"),
    "spout": ("spout", "nozzle", "snout"),
    "lid": ("lid", "cover", "top"),
    "knob": ("knob",),
    "cap": ("cap",),
    "head": ("head", "striking face", "face"),
    "bowl": ("bowl", "cup end", "scoop end"),
    "hook": ("hook", "peg", "arm"),
    "pole": ("pole", "post", "column"),
    "base": ("base", "bottom", "foot"),
    "board": ("board", "plank"),
    "frame": ("frame",),
    "drawer": ("drawer",),
    "drawer_handle": ("drawer handle", "drawer pull"),
    "door": ("door",),
    "door_handle": ("door handle", "door pull"),
    "leaves": ("leaves", "leaf", "greens", "foliage"),
}


def category(name: str) -> Category:
    """The category called ``name``; a clear error listing the known ones otherwise."""
    try:
        return CATEGORIES[name]
    except KeyError:
        raise KeyError(f"unknown object category {name!r}; known: {', '.join(sorted(CATEGORIES))}") from None
