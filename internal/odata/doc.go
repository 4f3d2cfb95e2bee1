// Package odata parses and evaluates the OData query options of the Table service: $filter
// (lexer, parser, typed evaluator and key-range planner), $select and $top.
//
// A $filter is parsed once into a Filter, which is compiled into a small branch program so
// that Match runs without allocating, and whose KeyRanges tell the scan which (PartitionKey,
// RowKey) ranges can hold matches at all.
//
// The service parses filters with the .NET OData library, and it shows: keywords are
// case-sensitive (the boolean literals aside), `not` binds tighter than a comparison, and syntax errors read
// "Syntax error at position 7 in 'aaa bbb ccc'." with positions counted in UTF-16 code units.
// This package follows that parser where the real service's behaviour is known and documents
// each choice where it is not (see shared/spec/odata-query.md and the comments at each
// decision).
//
// Evaluation semantics, with the evidence behind them:
//
//   - A comparison against a property the entity does not have is false for every operator,
//     ne included (real-service traces in Azure/Azurite#2342: foo ne <empty string> skips entities
//     without foo). Logic is two-valued: `not (foo eq 1)` is true for such an entity.
//   - Same-type values compare naturally: strings ordinally by bytes, Guids by their canonical
//     lowercase text, booleans false < true, DateTimes by ticks, Binary bytewise.
//   - A numeric literal is widened to the property's type when that is a widening
//     (Int32 literal vs Int64 or Double property, Int64 literal vs Double property); narrowing
//     directions (Int64 or Double literal vs Int32 property, Double literal vs Int64 property)
//     are type mismatches. This follows the comparison matrix of Andrei15193/CloudStub, which
//     was calibrated against the service.
//   - Any other type mismatch orders the property before the literal: eq, gt and ge are
//     false, ne, lt and le are true. Same source, and consistent with Azure/Azurite#2342, where
//     Double and DateTime values matched foo lt <empty string> on the real service.
//   - Double NaN compares equal to NaN and below every other number (.NET's CompareTo order),
//     so NaN values can be found with `X eq NaN` (UNSURE: no recording).
package odata
