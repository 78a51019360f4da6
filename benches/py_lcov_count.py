"""A plain Python LCOV reader (the peer in parsers_vs_python.sh): one loop over the lines
summing DA entries, as a hand-written CI script would. Prints lines_found/lines_hit."""
import sys


def main(path):
    found = hit = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("DA:"):
                fields = line[3:].split(",")
                found += 1
                if int(fields[1]) > 0:
                    hit += 1
    print(f"lines_found={found} lines_hit={hit}")


if __name__ == "__main__":
    main(sys.argv[1])
